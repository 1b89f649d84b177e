//! Where Corvid's files live by default, by the platform's conventions:
//! - Unix (Linux, macOS): `~/.config/corvid/config.toml`, data in `$XDG_DATA_HOME/corvid` or
//!   `~/.local/share/corvid` (the XDG layout command-line tools use on macOS too);
//! - Windows: `%APPDATA%\corvid\config.toml`, data in `%LOCALAPPDATA%\corvid` (roaming
//!   settings, local data), the home folder from `USERPROFILE` when `HOME` is unset.

use std::path::{Path, PathBuf};

use super::Env;

/// The user's home folder.
pub fn home(env: &dyn Env) -> Option<PathBuf> {
    let home = env.var("HOME");
    #[cfg(windows)]
    let home = home.or_else(|| env.var("USERPROFILE"));
    home.map(PathBuf::from)
}

/// The config file when `CORVID_CONFIG` names none.
pub fn config_file(env: &dyn Env, home: Option<&Path>) -> Option<PathBuf> {
    #[cfg(windows)]
    if let Some(app_data) = env.var("APPDATA") {
        return Some(PathBuf::from(app_data).join("corvid").join("config.toml"));
    }
    #[cfg(not(windows))]
    let _ = env;
    home.map(|h| h.join(".config/corvid/config.toml"))
}

/// The data folder when neither `CORVID_DATA_DIR` nor the file names one.
pub fn data_dir(env: &dyn Env, home: Option<&Path>) -> Option<PathBuf> {
    #[cfg(windows)]
    if let Some(local) = env.var("LOCALAPPDATA") {
        return Some(PathBuf::from(local).join("corvid"));
    }
    env.var("XDG_DATA_HOME")
        .map(|x| PathBuf::from(x).join("corvid"))
        .or_else(|| home.map(|h| h.join(".local/share/corvid")))
}
