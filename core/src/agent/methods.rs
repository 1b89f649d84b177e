//! The one table of the methods the agent takes from a client. Dispatch (`Handler` in
//! `agent/mod.rs`) and the fuzz entry point (`fuzzing::parse_params`) both `match` on
//! [`Method`] exhaustively, so a method added here must be handled, and fuzzed, in both.

/// Defines [`Method`], its wire names and the list of all of them in one place, so the list
/// cannot miss a variant.
macro_rules! methods {
    ($($variant:ident => $name:literal,)*) => {
        /// A method a client may send to the agent (requests, and `session/cancel`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Method {
            $($variant,)*
        }

        impl Method {
            /// Every method, in the table's order.
            pub const ALL: &'static [Method] = &[$(Method::$variant,)*];

            /// The name on the wire.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Method::$variant => $name,)*
                }
            }
        }
    };
}

methods! {
    Initialize => "initialize",
    Authenticate => "authenticate",
    Logout => "logout",
    SessionNew => "session/new",
    SessionLoad => "session/load",
    SessionResume => "session/resume",
    SessionList => "session/list",
    SessionDelete => "session/delete",
    SessionClose => "session/close",
    // ZeroClaw compatibility.
    SessionStop => "session/stop",
    SessionPrompt => "session/prompt",
    // A notification; as a request it is answered -32601 saying so.
    SessionCancel => "session/cancel",
    SessionSetMode => "session/set_mode",
    SessionSetConfigOption => "session/set_config_option",
    // Unstable in ACP v1 (schema features unstable_session_*).
    SessionFork => "session/fork",
    SessionSetTitle => "session/set_title",
    SessionArchive => "session/archive",
    SessionUnarchive => "session/unarchive",
    SessionStatus => "session/status",
    // Corvid extensions: durable "always" permission answers, listable and revocable.
    PermissionsList => "_corvid/permissions/list",
    PermissionsRevoke => "_corvid/permissions/revoke",
    // claude-agent-acp's and codex-acp's extension: a message into the running turn.
    SessionSteering => "_session/steering",
}

impl Method {
    pub fn from_name(name: &str) -> Option<Method> {
        Method::ALL.iter().copied().find(|m| m.name() == name)
    }
}

/// The wire names of [`Method::ALL`], for the fuzz targets.
pub const NAMES: [&str; Method::ALL.len()] = {
    let mut names = [""; Method::ALL.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = Method::ALL[i].name();
        i += 1;
    }
    names
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        for (i, m) in Method::ALL.iter().enumerate() {
            assert_eq!(Method::from_name(m.name()), Some(*m));
            assert_eq!(NAMES[i], m.name());
            assert!(!NAMES[..i].contains(&m.name()), "{} twice", m.name());
        }
        assert_eq!(Method::from_name("session/unknown"), None);
    }
}
