//! The one table of the methods the agent takes from a client, on ACP v1 and v2 together: each
//! row is a method's name and the protocol versions that serve it. Dispatch (`Handler` in
//! `agent/mod.rs` for v1, `Agent::request_v2` in `agent/v2.rs`) and the fuzz entry points
//! (`fuzzing::parse_params`, `parse_params_v2`) all `match` on [`Method`] exhaustively, so a
//! method added here must be handled, and fuzzed, on each version it names.

/// On which protocol versions a method is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    V1,
    V2,
    Both,
}

impl Served {
    const fn on(self, v2: bool) -> bool {
        matches!((self, v2), (Served::Both, _) | (Served::V1, false) | (Served::V2, true))
    }
}

/// Defines [`Method`], its wire names, the versions serving it and the list of all of them in
/// one place, so no list can miss a variant.
macro_rules! methods {
    ($($variant:ident => $name:literal on $served:ident,)*) => {
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

            /// The protocol versions that serve it.
            pub const fn served(self) -> Served {
                match self {
                    $(Method::$variant => Served::$served,)*
                }
            }
        }
    };
}

methods! {
    Initialize => "initialize" on Both,
    Authenticate => "authenticate" on V1,
    Logout => "logout" on V1,
    // v2's names for v1's authenticate and logout.
    AuthLogin => "auth/login" on V2,
    AuthLogout => "auth/logout" on V2,
    SessionNew => "session/new" on Both,
    SessionLoad => "session/load" on V1,
    // v2: `replayFrom` asks for the replay v1 has in session/load.
    SessionResume => "session/resume" on Both,
    SessionList => "session/list" on Both,
    SessionDelete => "session/delete" on Both,
    SessionClose => "session/close" on Both,
    // ZeroClaw compatibility.
    SessionStop => "session/stop" on V1,
    // v2: answered with the message's id while the turn runs on.
    SessionPrompt => "session/prompt" on Both,
    // A notification; as a request it is answered -32601 saying so.
    SessionCancel => "session/cancel" on Both,
    SessionSetMode => "session/set_mode" on V1,
    SessionSetConfigOption => "session/set_config_option" on Both,
    // Unstable in ACP v1 (schema features unstable_session_*).
    SessionFork => "session/fork" on V1,
    SessionSetTitle => "session/set_title" on V1,
    SessionArchive => "session/archive" on V1,
    SessionUnarchive => "session/unarchive" on V1,
    SessionStatus => "session/status" on V1,
    // v2: stop one tool call, or one agent-owned terminal's command; the turn goes on.
    ToolCallCancel => "tool_call/cancel" on V2,
    TerminalCancel => "terminal/cancel" on V2,
    // Corvid extensions: durable "always" permission answers, listable and revocable.
    PermissionsList => "_corvid/permissions/list" on V1,
    PermissionsRevoke => "_corvid/permissions/revoke" on V1,
    // claude-agent-acp's and codex-acp's extension: a message into the running turn.
    SessionSteering => "_session/steering" on V1,
}

impl Method {
    /// The method of that name served on v1 (`v2 = false`) or v2.
    pub fn from_name(name: &str, v2: bool) -> Option<Method> {
        Method::ALL.iter().copied().find(|m| m.name() == name && m.served().on(v2))
    }
}

/// How many methods a version serves.
const fn count(v2: bool) -> usize {
    let (mut n, mut i) = (0, 0);
    while i < Method::ALL.len() {
        if Method::ALL[i].served().on(v2) {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The wire names a version serves, in the table's order.
const fn names<const N: usize>(v2: bool) -> [&'static str; N] {
    let mut names = [""; N];
    let (mut n, mut i) = (0, 0);
    while i < Method::ALL.len() {
        if Method::ALL[i].served().on(v2) {
            names[n] = Method::ALL[i].name();
            n += 1;
        }
        i += 1;
    }
    names
}

/// The wire names of the methods v1 serves, for the fuzz targets.
pub const NAMES: [&str; count(false)] = names(false);
/// The wire names of the methods v2 serves, for the fuzz targets.
pub const V2_NAMES: [&str; count(true)] = names(true);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_on_the_versions_that_serve_them_and_are_unique() {
        for (i, m) in Method::ALL.iter().enumerate() {
            assert!(!Method::ALL[..i].iter().any(|o| o.name() == m.name()), "{} twice", m.name());
            for v2 in [false, true] {
                let served = m.served().on(v2);
                assert_eq!(Method::from_name(m.name(), v2), served.then_some(*m), "{} on v2={v2}", m.name());
                let list: &[&str] = if v2 { &V2_NAMES } else { &NAMES };
                assert_eq!(list.contains(&m.name()), served, "{} in the v2={v2} list", m.name());
            }
        }
        assert_eq!(
            NAMES.len() + V2_NAMES.len(),
            Method::ALL.iter().map(|m| 1 + usize::from(m.served() == Served::Both)).sum::<usize>()
        );
        assert_eq!(Method::from_name("session/unknown", false), None);
        assert_eq!(Method::from_name("auth/login", false), None, "v2's name only on v2");
        assert_eq!(Method::from_name("session/load", true), None, "v1's load only on v1");
    }
}
