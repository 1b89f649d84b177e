#!/usr/bin/env python3
"""llama.cpp's own HTTP server (embedded in the `xllamacpp` wheel) on loopback, for the real-model
tests (tests/real-model/, installed by scripts/real-model.sh).

Usage: serve.py MODEL.gguf PORT
Env:   THREADS (default 2), CTX (default 8192, the model's trained window), ALIAS (the model id the
       server reports; default "smollm2"), CHAT_TEMPLATE_FILE (a Jinja chat template replacing the
       GGUF's own, like llama-server --chat-template-file; default: smollm2-native-tools.jinja
       next to this file; empty: the GGUF's template), TEMP (default sampling temperature, 0),
       N_PREDICT (the longest answer in tokens, 256; a request asking for more gets this many),
       VERBOSITY (llama.cpp's log level, like llama-server -lv N).

The HTTP server listens first and answers 503 "Loading model" (every endpoint, /health too)
while the model loads (about 0.5 s); then "listening: ADDRESS" is printed and it serves until
SIGTERM/SIGINT, or until its stdin closes (so it never outlives a parent that died without
killing it; EXIT_ON_STDIN_EOF=0 turns that off).
"""
import os
import signal
import sys
import threading

import xllamacpp as xlc

model, port = sys.argv[1], int(sys.argv[2])
here = os.path.dirname(os.path.abspath(__file__))
template = os.environ.get("CHAT_TEMPLATE_FILE", os.path.join(here, "smollm2-native-tools.jinja"))

p = xlc.CommonParams()
p.model.path = os.path.abspath(model)
p.hostnames = ["127.0.0.1"]  # loopback only
p.port = port
p.n_ctx = int(os.environ.get("CTX", "8192"))
p.n_parallel = 1
p.use_jinja = True  # chat templates through Jinja: needed for tool calling
if template:
    # The GGUF's own template has no tool support: llama.cpp would drop `tools` silently.
    with open(template) as f:
        p.chat_template = f.read()
threads = int(os.environ.get("THREADS", "2"))
p.cpuparams.n_threads = threads
p.cpuparams_batch.n_threads = threads
p.model_alias = {os.environ.get("ALIAS", "smollm2")}
p.endpoint_metrics = True
# Clients that send no `temperature` (Corvid sends none) get this one: greedy decoding, so a
# 135M model's answers (and tool calls) repeat from run to run. llama.cpp's default is 0.8.
p.sampling.temp = float(os.environ.get("TEMP", "0"))
p.sampling.seed = 1234
# A tiny model at temperature 0 can repeat itself until the window is full: cap every answer
# (like llama-server -n), so a test fails fast with finish_reason "length" instead.
p.n_predict = int(os.environ.get("N_PREDICT", "256"))
if os.environ.get("VERBOSITY"):
    p.verbosity = int(os.environ["VERBOSITY"])

srv = xlc.Server(p)  # returns once the model is loaded
print("listening:", srv.listening_address, flush=True)

stop = threading.Event()
for s in (signal.SIGTERM, signal.SIGINT):
    signal.signal(s, lambda *_: stop.set())


def watch_stdin():
    try:
        while sys.stdin.buffer.read(4096):
            pass
    except Exception:
        pass
    stop.set()


if os.environ.get("EXIT_ON_STDIN_EOF", "1") == "1":
    threading.Thread(target=watch_stdin, daemon=True).start()
stop.wait()
print("stopping", flush=True)
