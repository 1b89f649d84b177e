// What every bench script shares: percentiles and the Markdown table it prints.

/** The `p` quantile (0..1) of `xs` by rank; NaN when empty. */
export function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(s.length * p))] : NaN;
}

/** Prints `rows` (arrays of strings) under `head` as a Markdown table, columns padded. */
export function printTable(head, rows) {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r) => `| ${r.map((c, i) => c.padEnd(w[i])).join(" | ")} |`;
  console.log(line(head));
  console.log(`|${w.map((n) => "-".repeat(n + 2)).join("|")}|`);
  for (const r of rows) console.log(line(r));
}
