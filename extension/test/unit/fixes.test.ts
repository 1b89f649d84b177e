// The provider errors that name environment variables, mapped to what to do in VS Code.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixesFor, inVsCodeTerms, knownFix } from "../../src/fixes";

// The core's own messages (core/src/provider/request.rs, error.rs; core/src/config/mod.rs).
const UNAUTHORIZED = "model provider returned 401 Unauthorized: fake error 401: check CORVID_API_KEY (or OPENAI_API_KEY)";
const NOT_FOUND = "model provider returned 404 Not Found: check CORVID_MODEL (`gpt-x`) and CORVID_BASE_URL (http://h/v1)";
const CONNECT = "could not connect to the model provider at http://127.0.0.1:9/v1: connection refused: check CORVID_BASE_URL and that the server is running";
const NO_MODELS = "model provider at http://h/v1 offers no models: set CORVID_MODEL";

test("an error naming CORVID_API_KEY offers Set API Key (the command)", () => {
  assert.deepEqual(fixesFor(UNAUTHORIZED, true), [{ kind: "command", command: "corvid.setApiKey", label: "Set API Key" }]);
  // A provider's own key variable (Anthropic's fallback) is the same fix.
  assert.deepEqual(fixesFor("check ANTHROPIC_API_KEY", true).map((f) => f.label), ["Set API Key"]);
});

test("CORVID_BASE_URL and CORVID_MODEL open their settings, each once, in a fixed order", () => {
  assert.deepEqual(fixesFor(NOT_FOUND, true), [
    { kind: "setting", setting: "corvid.baseUrl", label: "Open setting corvid.baseUrl" },
    { kind: "setting", setting: "corvid.model", label: "Open setting corvid.model" },
  ]);
  assert.deepEqual(fixesFor(CONNECT, true).map((f) => f.label), ["Open setting corvid.baseUrl"]);
  assert.deepEqual(fixesFor(NO_MODELS, true).map((f) => f.label), ["Open setting corvid.model"]);
  const all = fixesFor("Set CORVID_BASE_URL, CORVID_API_KEY and CORVID_MODEL; or CORVID_MODEL again", true);
  assert.deepEqual(all.map((f) => f.label), ["Set API Key", "Open setting corvid.baseUrl", "Open setting corvid.model"]);
});

test("no fix for other errors, for look-alike names, or with an external agent", () => {
  assert.deepEqual(fixesFor("model provider returned 429 Too Many Requests: rate limited", true), []);
  assert.deepEqual(fixesFor("check MY_CORVID_MODELS", true), []);
  assert.deepEqual(fixesFor(UNAUTHORIZED, false), [], "an external agent's environment is not the extension's to set");
});

test("knownFix accepts only the actions fixesFor offers", () => {
  assert.equal(knownFix({ kind: "command", command: "corvid.setApiKey" })?.label, "Set API Key");
  assert.equal(knownFix({ kind: "setting", setting: "corvid.model" })?.label, "Open setting corvid.model");
  assert.equal(knownFix({ kind: "command", command: "workbench.action.terminal.sendSequence" }), undefined);
  assert.equal(knownFix({ kind: "setting", setting: "corvid.agent.command" }), undefined);
  assert.equal(knownFix({ kind: "setting", command: "corvid.setApiKey" }), undefined);
});

test("with the built-in core, messages name VS Code's settings and commands, not variables", () => {
  assert.equal(
    inVsCodeTerms("401 Unauthorized: set CORVID_API_KEY (or OPENAI_API_KEY)", true),
    "401 Unauthorized: set the API key (Corvid: Set API Key)",
  );
  assert.equal(
    inVsCodeTerms("check CORVID_MODEL (`gpt-x`) and CORVID_BASE_URL (http://x/v1)", true),
    "check the corvid.model setting (`gpt-x`) and the corvid.baseUrl setting (http://x/v1)",
  );
  assert.equal(inVsCodeTerms("set CORVID_PROVIDER=anthropic and ANTHROPIC_API_KEY", true), "set the corvid.provider setting to anthropic and the API key (Corvid: Set API Key)");
  // Look-alikes stay; an external agent's message stays as it is.
  assert.equal(inVsCodeTerms("MY_CORVID_MODELS", true), "MY_CORVID_MODELS");
  assert.equal(inVsCodeTerms("set CORVID_API_KEY", false), "set CORVID_API_KEY");
});
