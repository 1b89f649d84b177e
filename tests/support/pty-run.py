#!/usr/bin/env python3
"""Runs a command in a pseudo-terminal, for tests of terminal UIs (`corvid chat`).

What arrives on our stdin is typed into the terminal (so "\\x03" is Ctrl-C and "\\x04" is
Ctrl-D, handled by the terminal's line discipline as for a person); everything the command
shows comes out on our stdout. Exits with the command's exit code (128+N if killed by signal N).
Needs only the Python standard library.
"""
import os
import pty
import select
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: pty-run.py COMMAND [ARG...]")
    pid, master = pty.fork()
    if pid == 0:
        os.execvp(sys.argv[1], sys.argv[1:])
    stdin_open = True
    while True:
        watch = [master] + ([0] if stdin_open else [])
        ready, _, _ = select.select(watch, [], [])
        if master in ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the command and everything it started closed the terminal
                data = b""
            if not data:
                break
            os.write(1, data)
        if 0 in ready:
            data = os.read(0, 65536)
            if data:
                os.write(master, data)
            else:
                stdin_open = False
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    sys.exit(128 - code if code < 0 else code)


if __name__ == "__main__":
    main()
