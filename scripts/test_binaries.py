"""Reads `cargo test --no-run --message-format=json` on stdin and prints each test binary as
`PACKAGE_DIR<TAB>EXECUTABLE<TAB>NAME`, the longest-running first, so that lanes running them side by
side end near together."""
import json
import os
import sys

# (crate directory, test target) of the binaries that run a minute or more, longest first;
# the others follow in cargo's order.
LONGEST = [("testkit", "it"), ("client", "it"), ("store", "it"), ("gateway", "it"),
           ("server", "it"), ("core", "vouch_core"), ("bench", "vouch_bench"), ("cli", "it")]

binaries = []
for line in sys.stdin:
    if not line.startswith("{"):
        continue
    message = json.loads(line)
    if message.get("reason") == "compiler-artifact" and message["profile"]["test"] \
            and message.get("executable"):
        directory = os.path.dirname(message["manifest_path"])
        binaries.append((directory, message["executable"], message["target"]["name"]))


def rank(binary):
    key = (os.path.basename(binary[0]), binary[2])
    return LONGEST.index(key) if key in LONGEST else len(LONGEST)


for directory, executable, target in sorted(binaries, key=rank):
    print(f"{directory}\t{executable}\t{os.path.basename(directory)} {target}")
