//! `corvid login` / `corvid logout` (and `corvid acp --login`, which is how an editor's
//! terminal sign-in runs it): the flow is `corvid_core::login`, shared with the Node addon.

use std::io::Write;

use corvid_core::config::ProcessEnv;

/// The interactive sign-in.
pub fn login() -> anyhow::Result<()> {
    corvid_core::login::login(&ProcessEnv)?;
    Ok(())
}

/// Removes the stored API key.
pub fn logout() -> anyhow::Result<()> {
    let (path, removed) = corvid_core::login::logout(&ProcessEnv)?;
    let mut err = std::io::stderr();
    let _ = if removed {
        writeln!(err, "Removed the API key from {}.", path.display())
    } else {
        writeln!(err, "No API key stored in {}.", path.display())
    };
    Ok(())
}
