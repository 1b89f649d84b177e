//! Resolving the file and the environment into a [`Config`], agent aliases included.

use super::*;
use std::collections::HashMap;

struct MapEnv(HashMap<&'static str, &'static str>);
impl Env for MapEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).map(|s| s.to_string())
    }
}

fn file(text: &str) -> FileConfig {
    toml::from_str(text).expect("valid toml")
}

#[test]
fn environment_overrides_the_file() {
    let env = MapEnv(HashMap::from([("CORVID_MODEL", "m-env"), ("OPENAI_API_KEY", "sk-fallback")]));
    let f = file("[provider]\nbase_url = \"http://x/v1\"\nmodel = \"m-file\"\nmodels = [\"a\"]\n");
    let c = Config::resolve(f, &env, None, None).expect("config");
    let p = c.provider.expect("provider");
    assert_eq!(p.model.as_deref(), Some("m-env"));
    assert_eq!(p.models, vec!["m-env", "a"]);
    assert_eq!(p.api_key.as_deref(), Some("sk-fallback"));
    assert_eq!(p.base_url, "http://x/v1");
}

#[test]
fn a_broken_file_is_a_problem_but_the_environment_still_places_the_data() {
    let dir = std::env::temp_dir().join(format!("corvid-config-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[provider\n").expect("write");
    let bad = bad.display().to_string();
    let bad: &'static str = Box::leak(bad.into_boxed_str());
    for (config, what) in [(bad, "line 1"), ("/nonexistent/corvid.toml", "cannot read")] {
        let env = MapEnv(HashMap::from([("CORVID_CONFIG", config), ("HOME", "/home/u")]));
        let c = Config::load_or_problem(&env);
        let problem = c.problem.as_deref().unwrap_or_default();
        assert!(problem.contains(config) && problem.contains(what), "{problem}");
        assert_eq!(c.data_dir, PathBuf::from("/home/u/.local/share/corvid"), "not ./.corvid in the editor's folder");
        let env = MapEnv(HashMap::from([("CORVID_CONFIG", config), ("CORVID_DATA_DIR", "/data")]));
        assert_eq!(Config::load_or_problem(&env).data_dir, PathBuf::from("/data"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nothing_set_resolves_to_the_defaults() {
    let c = Config::resolve(FileConfig::default(), &MapEnv(HashMap::new()), None, None).expect("config");
    assert_eq!(format!("{c:?}"), format!("{:?}", Config::default()));
}

#[test]
fn nothing_configured_means_no_provider() {
    let c =
        Config::resolve(FileConfig::default(), &MapEnv(HashMap::new()), Some(Path::new("/h")), None).expect("config");
    assert!(c.provider.is_none());
    assert_eq!(c.data_dir, PathBuf::from("/h/.local/share/corvid"));
}

#[test]
fn unknown_provider_and_unknown_keys_are_errors() {
    let env = MapEnv(HashMap::from([("CORVID_PROVIDER", "acme")]));
    assert!(matches!(Config::resolve(FileConfig::default(), &env, None, None), Err(ConfigError::UnknownProvider(_))));
    assert!(toml::from_str::<FileConfig>("bogus = 1").is_err());
    let e = Config::resolve(FileConfig::default(), &env, None, None).expect_err("unknown");
    assert!(e.to_string().contains("`openai`") && e.to_string().contains("`anthropic`"), "{e}");
}

#[test]
fn anthropic_uses_its_own_key_and_url() {
    let env = MapEnv(HashMap::from([
        ("CORVID_PROVIDER", "anthropic"),
        ("ANTHROPIC_API_KEY", "sk-ant"),
        ("OPENAI_API_KEY", "sk-openai"),
        ("CORVID_MODEL", "claude-sonnet-4-5"),
    ]));
    let c = Config::resolve(FileConfig::default(), &env, None, None).expect("config");
    let p = c.provider.expect("provider");
    assert_eq!(p.kind, ProviderKind::Anthropic);
    assert_eq!(p.api_key.as_deref(), Some("sk-ant"));
    assert_eq!(p.base_url, ProviderKind::Anthropic.default_base_url());
    assert_eq!(c.context_window, None, "the model catalog knows the window");
    assert_eq!(c.max_output_tokens, None);
}

#[test]
fn anthropic_never_takes_the_openai_key_and_corvid_key_wins() {
    let env = MapEnv(HashMap::from([("OPENAI_API_KEY", "sk-openai")]));
    let f = file("[provider]\nkind = \"anthropic\"\nmodel = \"claude-opus-4-1\"\nmax_output_tokens = 4096\n");
    let c = Config::resolve(f, &env, None, None).expect("config");
    assert_eq!(c.max_output_tokens, Some(4096));
    let p = c.provider.expect("provider");
    assert_eq!(p.kind, ProviderKind::Anthropic);
    assert_eq!(p.api_key, None);

    let env = MapEnv(HashMap::from([
        ("CORVID_PROVIDER", "anthropic"),
        ("CORVID_API_KEY", "sk-corvid"),
        ("ANTHROPIC_API_KEY", "sk-ant"),
    ]));
    let p = Config::resolve(FileConfig::default(), &env, None, None).expect("config").provider.expect("provider");
    assert_eq!(p.api_key.as_deref(), Some("sk-corvid"));
    assert_eq!(p.model, None, "the model list is asked at session/new");
}

#[test]
fn openai_keeps_its_key_fallback() {
    let env = MapEnv(HashMap::from([("OPENAI_API_KEY", "sk-openai"), ("ANTHROPIC_API_KEY", "sk-ant")]));
    let p = Config::resolve(FileConfig::default(), &env, None, None).expect("config").provider.expect("provider");
    assert_eq!(p.kind, ProviderKind::OpenAi);
    assert_eq!(p.api_key.as_deref(), Some("sk-openai"));
    assert_eq!(p.base_url, ProviderKind::OpenAi.default_base_url());
}

#[test]
fn base_urls_fall_back_to_the_providers_own_variables() {
    let env = MapEnv(HashMap::from([
        ("CORVID_PROVIDER", "anthropic"),
        ("ANTHROPIC_BASE_URL", "http://127.0.0.1:8088"),
        ("OPENAI_BASE_URL", "http://openai.invalid/v1"),
    ]));
    let p = Config::resolve(FileConfig::default(), &env, None, None).expect("config").provider.expect("provider");
    assert_eq!(p.base_url, "http://127.0.0.1:8088", "Anthropic's variable for Anthropic, never OpenAI's");
    // The config file's base URL wins over them, CORVID_BASE_URL over both.
    let f = file("[provider]\nbase_url = \"http://file/v1\"\n");
    let p = Config::resolve(f, &env, None, None).expect("config").provider.expect("provider");
    assert_eq!(p.base_url, "http://file/v1");
    let env =
        MapEnv(HashMap::from([("OPENAI_BASE_URL", "http://vllm:8000/v1"), ("CORVID_BASE_URL", "http://corvid/v1")]));
    let p = Config::resolve(FileConfig::default(), &env, None, None).expect("config").provider.expect("provider");
    assert_eq!(p.base_url, "http://corvid/v1");
    let env = MapEnv(HashMap::from([("OPENAI_BASE_URL", "http://vllm:8000/v1")]));
    let p = Config::resolve(FileConfig::default(), &env, None, None).expect("config").provider.expect("provider");
    assert_eq!(
        (p.kind, p.base_url.as_str()),
        (ProviderKind::OpenAi, "http://vllm:8000/v1"),
        "OPENAI_BASE_URL alone configures"
    );
}

#[test]
fn prices_and_budgets() {
    let f = file(
        "[provider]\nmodel = \"m\"\ninput_price_per_mtok = 3.0\noutput_price_per_mtok = 15.0\n\
         [limits]\nmax_session_tokens = 1000\nmax_session_cost = 0.5\n",
    );
    let c = Config::resolve(f, &MapEnv(HashMap::new()), None, None).expect("config");
    let prices = c.prices.expect("prices");
    assert_eq!(prices.currency, "USD");
    let used = |input, output, read, write| crate::provider::TokenUsage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: read,
        cache_write_tokens: write,
    };
    assert!((prices.cost(&used(1_000_000, 100_000, 0, 0)) - 4.5).abs() < 1e-9);
    // Cache rates unset: cached input costs what input costs.
    assert!((prices.cost(&used(1_000_000, 100_000, 600_000, 0)) - 4.5).abs() < 1e-9);
    let cached = Prices { cache_read_per_mtok: Some(0.3), cache_write_per_mtok: Some(3.75), ..prices.clone() };
    // 200k uncached at 3, 600k read at 0.3, 200k written at 3.75, 100k out at 15.
    let expected = (200_000.0 * 3.0 + 600_000.0 * 0.3 + 200_000.0 * 3.75 + 100_000.0 * 15.0) / 1e6;
    assert!((cached.cost(&used(1_000_000, 100_000, 600_000, 200_000)) - expected).abs() < 1e-9);
    assert_eq!(c.budget, Budget { max_tokens: Some(1000), max_cost: Some(0.5) });
    let none = Config::resolve(FileConfig::default(), &MapEnv(HashMap::new()), None, None).expect("config");
    assert!(none.prices.is_none());
}

#[test]
fn model_sections_override_the_catalog_for_one_model() {
    let f = file(
        "[models.\"qwen2.5-coder\"]\ncontext_window = 16384\nreasoning = \"always\"\n\
         input_price_per_mtok = 0.5\ncache_read_price_per_mtok = 0.05\n",
    );
    let c = Config::resolve(f, &MapEnv(HashMap::new()), None, None).expect("config");
    let over = c.models.get("qwen2.5-coder").expect("section");
    assert_eq!(over.context_window, Some(16384));
    assert_eq!(over.reasoning, Some(crate::catalog::Reasoning::Always));
    let prices = over.prices.as_ref().expect("prices");
    assert_eq!((prices.input_per_mtok, prices.output_per_mtok, prices.cache_read_per_mtok), (0.5, 0.0, Some(0.05)));
    let bad = file("[models.m]\nreasoning = \"lots\"\n");
    let err = Config::resolve(bad, &MapEnv(HashMap::new()), None, None).err().map(|e| e.to_string());
    assert!(err.as_deref().is_some_and(|e| e.contains("[models.\"m\"] reasoning")), "{err:?}");
}

#[test]
fn agent_aliases_and_their_provider_overrides() {
    let f = file(
        "[provider]\nbase_url = \"http://x/v1\"\napi_key = \"k\"\nmodel = \"m\"\n\
         [acp]\ndefault_agent = \"a\"\n\
         [agents.a]\nmodel = \"m2\"\ntools = [\"read_file\"]\n\
         [agents.b]\nkind = \"anthropic\"\nenabled = false\n",
    );
    let c = Config::resolve(f, &MapEnv(HashMap::new()), None, None).expect("config");
    assert_eq!(c.default_agent.as_deref(), Some("a"));
    let a = &c.agents["a"];
    assert!(a.enabled);
    assert_eq!(a.tools.as_deref(), Some(&["read_file".to_string()][..]));
    let pa = c.for_agent(a).provider.expect("provider");
    assert_eq!(
        (pa.base_url.as_str(), pa.api_key.as_deref(), pa.model.as_deref()),
        ("http://x/v1", Some("k"), Some("m2"))
    );
    assert_eq!(pa.models, vec!["m2".to_string()]);
    let b = &c.agents["b"];
    assert!(!b.enabled);
    // Another provider kind: its own default URL, and the other endpoint's key stays home.
    let pb = c.for_agent(b).provider.expect("provider");
    assert_eq!(pb.kind, ProviderKind::Anthropic);
    assert_eq!(pb.base_url, ProviderKind::Anthropic.default_base_url());
    assert_eq!(pb.api_key, None);
    let bad = toml::from_str::<FileConfig>("[agents.x]\nkind = \"nope\"\n").expect("toml");
    assert!(Config::resolve(bad, &MapEnv(HashMap::new()), None, None).is_err());
    let bad = toml::from_str::<FileConfig>("[agents.x]\nkind = \"nope\"\n").expect("toml");
    let e = Config::resolve(bad, &MapEnv(HashMap::new()), None, None).expect_err("unknown kind");
    assert!(e.to_string().starts_with("unsupported provider `nope (in [agents.x])`: Corvid supports `openai`"), "{e}");
}

#[test]
fn the_sandbox_section_and_its_environment_override() {
    let c = Config::resolve(FileConfig::default(), &MapEnv(HashMap::new()), None, None).expect("config");
    assert_eq!(c.sandbox.mode, SandboxMode::WorkspaceWrite);
    assert!(!c.sandbox.network && !c.sandbox.required && c.sandbox.writable_roots.is_empty());

    let f = "[sandbox]\nmode = \"read-only\"\nnetwork = true\nwritable_roots = [\"/opt/cache\"]\nrequired = true\n";
    let c = Config::resolve(file(f), &MapEnv(HashMap::new()), None, None).expect("config");
    assert_eq!(c.sandbox.mode, SandboxMode::ReadOnly);
    assert!(c.sandbox.network && c.sandbox.required);
    assert_eq!(c.sandbox.writable_roots, vec![PathBuf::from("/opt/cache")]);

    let env = MapEnv(HashMap::from([("CORVID_SANDBOX", "off")]));
    let c = Config::resolve(file(f), &env, None, None).expect("config");
    assert_eq!(c.sandbox.mode, SandboxMode::Off);

    let env = MapEnv(HashMap::from([("CORVID_SANDBOX", "loose")]));
    let e = Config::resolve(FileConfig::default(), &env, None, None).expect_err("unknown mode");
    assert!(e.to_string().contains("`workspace-write`"), "{e}");
    assert!(toml::from_str::<FileConfig>("[sandbox]\nnetwrok = true\n").is_err());
}

#[test]
fn mcp_servers_opt_in_to_the_sandbox_by_name() {
    let f = "[mcp.servers.files]\nsandbox = true\n[mcp.servers.web]\nsandbox = false\n[mcp.servers.other]\n";
    let c = Config::resolve(file(f), &MapEnv(HashMap::new()), None, None).expect("config");
    assert_eq!(c.sandbox.mcp_servers, vec!["files".to_string()]);
    assert!(toml::from_str::<FileConfig>("[mcp.servers.x]\nsandboxed = true\n").is_err());
}
