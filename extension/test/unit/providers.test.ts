import { test } from "node:test";
import assert from "node:assert/strict";
import { checkBaseUrl, describeSettings, isProviderChoice, needsProvider, PRESETS, settingsFor } from "../../src/providers";

test("each provider choice writes its settings; only the OpenAI-compatible one takes a typed URL", () => {
  assert.deepEqual(settingsFor("openai", { baseUrl: " http://127.0.0.1:9/v1 ", model: "m" }), { provider: "openai", baseUrl: "http://127.0.0.1:9/v1", model: "m" });
  assert.deepEqual(settingsFor("openrouter", { baseUrl: "http://ignored", model: "" }), { provider: "openai", baseUrl: "https://openrouter.ai/api/v1", model: "" });
  // Anthropic: the provider kind's own default endpoint (the setting is cleared).
  assert.deepEqual(settingsFor("anthropic", { model: "claude-x" }), { provider: "anthropic", baseUrl: "", model: "claude-x" });
  assert.deepEqual(settingsFor("ollama", {}), { provider: "openai", baseUrl: "http://127.0.0.1:11434/v1", model: "" });
  assert.equal(PRESETS.ollama.needsKey, false);
  assert.ok(isProviderChoice("anthropic"));
  assert.ok(!isProviderChoice("toString"));
  assert.ok(!isProviderChoice(undefined));
});

test("checkBaseUrl accepts http(s) URLs only", () => {
  assert.equal(checkBaseUrl("https://api.openai.com/v1"), null);
  assert.equal(checkBaseUrl(" http://127.0.0.1:8080/v1 "), null);
  assert.match(checkBaseUrl("")!, /Enter/);
  assert.match(checkBaseUrl("api.openai.com")!, /URL/);
  assert.match(checkBaseUrl("file:///etc/passwd")!, /http/);
});

test("describeSettings says what the settings name", () => {
  assert.equal(describeSettings({}, false), "No provider set in VS Code's settings.");
  assert.equal(describeSettings({ provider: "openai", baseUrl: "http://x/v1", model: "m" }, true), "OpenAI-compatible at http://x/v1, model m; API key set.");
  assert.equal(describeSettings({ provider: "anthropic" }, false), "Anthropic, the endpoint's first model; API key not set.");
});

test("needsProvider: only the auth-required error of a missing provider, not a broken config file", () => {
  const noProvider = { code: -32000, message: "Authentication required: No model provider is configured and no local Ollama answered" };
  assert.ok(needsProvider(noProvider, []));
  assert.ok(needsProvider({ code: -32000, message: "Authentication required" }, [{ name: "Configure a model provider" }]));
  assert.ok(!needsProvider({ code: -32000, message: "Authentication required: config file /x.toml: not found" }, [{ name: "Fix Corvid's configuration" }]));
  assert.ok(!needsProvider({ code: -32603, message: "No model provider is configured" }, []));
  assert.ok(!needsProvider(new Error("boom"), null));
  assert.ok(!needsProvider(null, null));
});
