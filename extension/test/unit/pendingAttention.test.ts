import { test } from "node:test";
import assert from "node:assert/strict";
import { attentionText, PendingAttention, type Sight } from "../../src/pendingAttention";

const write = { id: 1, title: "Write hello.txt" };
const run = { id: 2, title: "Run npm test" };
const sight = (viewVisible: boolean, shown: number[], onScreen: number[]): Sight => ({ viewVisible, shown: new Set(shown), onScreen: new Set(onScreen) });

test("a request in a hidden view raises the badge and one notification once settled, never twice", () => {
  const a = new PendingAttention();
  // Not settled yet (the view may be being revealed): nothing.
  assert.deepEqual(a.update([write], sight(false, [], []), false), { badge: undefined, notify: null });
  const first = a.update([write], sight(false, [], []), true);
  assert.deepEqual(first.badge, { value: 1, tooltip: "Corvid: 1 request waiting for your approval" });
  assert.deepEqual(first.notify, { first: write, more: 0 });
  // Still hidden, still pending: the badge stays, no second notification.
  const again = a.update([write], sight(false, [], []), true);
  assert.equal(again.badge?.value, 1);
  assert.equal(again.notify, null);
  // Shown and on screen: the badge stays until the answer ...
  assert.equal(a.update([write], sight(true, [1], [1]), true).badge?.value, 1);
  // ... which clears it at once (not settled).
  assert.deepEqual(a.update([], sight(true, [], []), false), { badge: undefined, notify: null });
});

test("a card on screen in a visible view raises nothing; one not yet reported on is not unseen", () => {
  const a = new PendingAttention();
  assert.deepEqual(a.update([write], sight(true, [], []), true), { badge: undefined, notify: null });
  assert.deepEqual(a.update([write], sight(true, [1], [1]), true), { badge: undefined, notify: null });
});

test("a card off screen that was never on it alerts; one the reader saw and scrolled away from does not", () => {
  const a = new PendingAttention();
  const r = a.update([write], sight(true, [1], []), true);
  assert.equal(r.badge?.value, 1);
  assert.equal(r.notify?.first.id, 1);

  const b = new PendingAttention();
  b.update([write], sight(true, [1], [1]), false);
  assert.deepEqual(b.update([write], sight(true, [1], []), true), { badge: undefined, notify: null });
  // Hidden later (another view container): that alerts, seen or not.
  const hidden = b.update([write], sight(false, [1], []), true);
  assert.equal(hidden.badge?.value, 1);
  assert.equal(hidden.notify?.first.id, 1);
});

test("the badge counts every pending request; requests flagged together make one notification", () => {
  const a = new PendingAttention();
  const r = a.update([write, run], sight(false, [], []), true);
  assert.deepEqual(r.badge, { value: 2, tooltip: "Corvid: 2 requests waiting for your approval" });
  assert.deepEqual(r.notify, { first: write, more: 1 });
  assert.equal(attentionText(r.notify!), "Corvid is waiting for your approval: Write hello.txt (and 1 more)");
  // One answered: the count follows; a new request later gets its own notification.
  assert.equal(a.update([run], sight(false, [], []), false).badge?.value, 1);
  const third = { id: 3, title: "Edit a.ts" };
  const later = a.update([run, third], sight(false, [], []), true);
  assert.deepEqual(later.notify, { first: third, more: 0 });
  assert.equal(attentionText(later.notify!), "Corvid is waiting for your approval: Edit a.ts");
});
