"""Runs the shards of one Gadget run on a Ray cluster and merges their results.

`gadget cluster ray --address HOST:PORT --shards N CONFIG -- [gadget run args]` starts this
launcher (`python3 -m gadget_ray`, with this folder's parent on PYTHONPATH). It places N
shard processes on the cluster's nodes (one per node when there are enough), ships each the
`gadget` binary and the workload config through Ray's object store, agrees one start instant,
runs `gadget run CONFIG --shard I/N --start-at T -o shard-I.json` on every node, gathers the
results files and merges them with `gadget merge` (docs/scale-out.md, "Running shards on a
cluster: Ray and Kubernetes").

Ray only places, starts and gathers: the shards are the `gadget` binary, and what they
measure is what `gadget run --shard` measures on its own.
"""

#: The Ray release the launcher is tested with (scripts/setup.sh installs it). The driver and
#: the cluster must run the same Ray and Python versions, as Ray requires.
RAY_VERSION = "2.60.0"

__all__ = ["RAY_VERSION"]
