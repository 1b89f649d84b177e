import { test } from "node:test";
import assert from "node:assert/strict";
import { modelsLine, withModels } from "../../src/coreConfig";

test("no config file: a [provider] table with the models", () => {
  assert.equal(withModels(null, ["a", "b"]), '[provider]\nmodels = ["a", "b"]\n');
  assert.equal(withModels("", ["a"]), '[provider]\nmodels = ["a"]\n');
});

test("a file without [provider] keeps everything and gets the table appended", () => {
  assert.equal(withModels('[discovery]\nollama_url = "http://127.0.0.1:9"', ["m"]), '[discovery]\nollama_url = "http://127.0.0.1:9"\n\n[provider]\nmodels = ["m"]\n');
});

test("an existing models key is replaced, one line or several; other keys and tables stay", () => {
  const file = '# mine\n[provider]\nbase_url = "http://x/v1"\nmodels = ["old"]  # the old list\nmodel = "m"\n\n[discovery]\nollama_url = "u"\n';
  assert.equal(withModels(file, ["n1", "n2"]), '# mine\n[provider]\nbase_url = "http://x/v1"\nmodels = ["n1", "n2"]\nmodel = "m"\n\n[discovery]\nollama_url = "u"\n');
  const multi = '[provider]\nmodels = [\n  "a",\n  "b[1]", # not a bracket\n]\nmodel = "m"\n';
  assert.equal(withModels(multi, ["z"]), '[provider]\nmodels = ["z"]\nmodel = "m"\n');
});

test("a [provider] table without models gets the key first; [provider.x] and [[provider]] are other tables", () => {
  assert.equal(withModels('[provider]\nmodel = "m"\n', ["a"]), '[provider]\nmodels = ["a"]\nmodel = "m"\n');
  const other = '[agents.fast]\nmodels = ["keep"]\n[provider]\nkind = "openai"\n';
  assert.equal(withModels(other, ["a"]), '[agents.fast]\nmodels = ["keep"]\n[provider]\nmodels = ["a"]\nkind = "openai"\n');
});

test("model ids are TOML strings, quotes and backslashes escaped", () => {
  assert.equal(modelsLine(['we"ird', "back\\slash"]), 'models = ["we\\"ird", "back\\\\slash"]');
});
