//! Writing the config file: `corvid login` stores a provider there, `logout` removes the key.
//!
//! The file holds an API key, so on Unix it is written with mode 0600 (its directory 0700;
//! on Windows the user's profile folder's ACL keeps it private), through a temporary file and
//! a rename so a crash never leaves half a config. Other sections and keys
//! are kept; comments are not (the TOML is re-serialized).

use std::io::Write;
#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

use crate::config::ConfigError;

/// What `corvid login` asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderSettings {
    pub kind: String,
    pub base_url: String,
    pub model: String,
    /// `None` keeps the stored key.
    pub api_key: Option<String>,
}

fn read_table(path: &Path) -> Result<toml::Table, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => text.parse().map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            reason: crate::config::parse_reason(&text, &e),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(toml::Table::new()),
        Err(reason) => Err(ConfigError::Read { path: path.to_path_buf(), reason }),
    }
}

fn write_table(path: &Path, table: &toml::Table) -> Result<(), ConfigError> {
    let fail = |reason: std::io::Error| ConfigError::Write { path: path.to_path_buf(), reason };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        builder.mode(0o700);
        builder.recursive(true).create(dir).map_err(fail)?;
    }
    let text = toml::to_string(table).map_err(|e| fail(std::io::Error::other(e)))?;
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    #[cfg(unix)]
    options.mode(0o600);
    let mut file = options.write(true).create(true).truncate(true).open(&tmp).map_err(fail)?;
    file.write_all(text.as_bytes()).and_then(|()| file.sync_all()).map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(fail)
}

/// Stores the provider in `[provider]`, keeping everything else in the file.
pub fn save_provider(path: &Path, settings: &ProviderSettings) -> Result<(), ConfigError> {
    let mut table = read_table(path)?;
    let provider = table.entry("provider").or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let Some(provider) = provider.as_table_mut() else {
        return Err(ConfigError::Write {
            path: path.to_path_buf(),
            reason: std::io::Error::other("`provider` in the file is not a table"),
        });
    };
    provider.insert("kind".into(), settings.kind.clone().into());
    provider.insert("base_url".into(), settings.base_url.clone().into());
    provider.insert("model".into(), settings.model.clone().into());
    if let Some(key) = &settings.api_key {
        provider.insert("api_key".into(), key.clone().into());
    }
    write_table(path, &table)
}

/// Removes `[provider] api_key`. Returns whether there was one.
pub fn remove_api_key(path: &Path) -> Result<bool, ConfigError> {
    let mut table = read_table(path)?;
    let removed = table.get_mut("provider").and_then(|p| p.as_table_mut()).and_then(|p| p.remove("api_key")).is_some();
    if removed {
        write_table(path, &table)?;
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn login_then_logout_keeps_the_rest_of_the_file() {
        let dir = std::env::temp_dir().join(format!("corvid-cfg-{}", uuid::Uuid::new_v4()));
        let path = dir.join("nested/config.toml");
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, "store = \"none\"\n[limits]\nmax_turn_requests = 7\n").expect("write");
        let settings = ProviderSettings {
            kind: "anthropic".into(),
            base_url: "https://api.anthropic.com/v1".into(),
            model: "claude-sonnet-4-5".into(),
            api_key: Some("sk-secret".into()),
        };
        save_provider(&path, &settings).expect("save");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        let table = read_table(&path).expect("read");
        assert_eq!(table["provider"]["api_key"].as_str(), Some("sk-secret"));
        assert_eq!(table["limits"]["max_turn_requests"].as_integer(), Some(7));
        assert_eq!(table["store"].as_str(), Some("none"));

        // Logging in again without a key keeps the stored one.
        save_provider(&path, &ProviderSettings { api_key: None, ..settings }).expect("save");
        assert_eq!(read_table(&path).expect("read")["provider"]["api_key"].as_str(), Some("sk-secret"));

        assert!(remove_api_key(&path).expect("logout"));
        let table = read_table(&path).expect("read");
        assert!(table["provider"].get("api_key").is_none());
        assert_eq!(table["provider"]["model"].as_str(), Some("claude-sonnet-4-5"));
        assert!(!remove_api_key(&path).expect("second logout"));
        assert!(!remove_api_key(&dir.join("missing.toml")).expect("no file"));
    }
}
