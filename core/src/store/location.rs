//! Where the store lives: `--store` / config resolved to a file or a PostgreSQL URL, and the
//! URL as people may see it (without its password).

use std::path::{Path, PathBuf};

use super::StoreError;

/// Where the store lives.
#[derive(Debug, Clone, PartialEq)]
pub enum Location {
    File(PathBuf),
    /// A `postgres://` / `postgresql://` URL (may carry a password: show it with [`redact_url`]).
    Postgres(String),
}

/// Where the store lives, from `--store` / config (`None` = the default file in the data dir;
/// `Ok(None)` = no store).
pub fn resolve_location(store: Option<&str>, data_dir: &Path) -> Result<Option<Location>, StoreError> {
    match store {
        None => Ok(Some(Location::File(data_dir.join("sessions.db")))),
        Some("none" | "off" | "memory") => Ok(None),
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            Ok(Some(Location::Postgres(url.to_string())))
        }
        Some(url) => {
            let path = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")).unwrap_or(url);
            if path.contains("://") {
                return Err(StoreError::Url(redact_url(url)));
            }
            Ok(Some(Location::File(PathBuf::from(path))))
        }
    }
}

/// `url` with any password replaced by `***` (in the user-info part and in a `password=`
/// query parameter), for logs, errors and `initialize`'s `_meta`.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else { return url.to_string() };
    let (scheme, rest) = url.split_at(scheme_end);
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rfind('@') {
        Some(at) => {
            let (userinfo, host) = authority.split_at(at);
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{user}:***{host}"),
                None => authority.to_string(),
            }
        }
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => p.to_string(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}{authority}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        assert_eq!(redact_url("postgres://corvid:s3cret@db:5432/corvid"), "postgres://corvid:***@db:5432/corvid");
        assert_eq!(redact_url("postgres://corvid@127.0.0.1:5/x"), "postgres://corvid@127.0.0.1:5/x");
        assert_eq!(
            redact_url("postgresql://u:p@h/d?sslmode=require&password=x"),
            "postgresql://u:***@h/d?sslmode=require&password=***"
        );
        assert_eq!(redact_url("postgres://u:p%40ss@h"), "postgres://u:***@h");
        assert_eq!(redact_url("/var/lib/sessions.db"), "/var/lib/sessions.db");
    }

    #[test]
    fn locations() {
        let data = Path::new("/data");
        assert_eq!(resolve_location(None, data).ok().flatten(), Some(Location::File(data.join("sessions.db"))));
        assert_eq!(resolve_location(Some("none"), data).ok().flatten(), None);
        assert_eq!(
            resolve_location(Some("sqlite:///tmp/s.db"), data).ok().flatten(),
            Some(Location::File(PathBuf::from("/tmp/s.db")))
        );
        assert_eq!(
            resolve_location(Some("postgres://u@h/d"), data).ok().flatten(),
            Some(Location::Postgres("postgres://u@h/d".into()))
        );
        let refused = resolve_location(Some("mysql://u:pw@h/d"), data).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(refused.contains("mysql://u:***@h/d"), "{refused}");
    }
}
