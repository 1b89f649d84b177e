// A loopback HTTP server that records the path of every request that reaches it: the tests'
// witness of whether a sandboxed command had network access.
import http from "node:http";

export async function startHitServer() {
  const hits = [];
  const server = http.createServer((req, res) => {
    hits.push(req.url);
    res.end("reached\n");
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const port = server.address().port;
  return {
    hits,
    port,
    url: `http://127.0.0.1:${port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
