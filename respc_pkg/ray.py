"""Batch parsing on a Ray cluster: ``respc.ray.parse_dataset`` (README.md "Batch: millions of outputs"; extra ``ray``).

A Ray Data ``map_batches`` with a class-based callable: each actor builds the parser once (from the
generated module's source, compiled once by the caller), then parses batch after batch. Each output
row has one column, ``record``: the output record as JSON text, byte for byte the line that
``respc parse --jsonl`` writes for the same input line (both go through
:func:`respc.compiler.batch.dump_record`).

Example (five lines)::

    import ray, respc.ray
    ray.init()
    ds = ray.data.read_text("outputs.jsonl")                 # one row per JSONL line, column "text"
    out = respc.ray.parse_dataset(ds, "qwen3", lines_column="text", prefix="")
    out.write_json("parsed/")                                # rows {"record": "<output record JSON>"}

Rows read with ``ray.data.read_json`` (records as columns) work too: leave ``lines_column`` out and
the ``keys``/``preset`` name the columns; Arrow may then have normalised the records (missing keys
become nulls), so only the ``lines_column`` path promises the CLI's bytes.
"""

from __future__ import annotations

from typing import Any, Mapping

from respc.compiler import batch as _batch

__all__ = ["parse_dataset", "RayParser"]


class RayParser:
    """The per-actor callable of :func:`parse_dataset`: builds the parser once, then parses batches.

    Args:
        parser: a :class:`respc.compiler.batch.RecordParser` (pickled to each actor).
        lines_column: the column holding raw JSONL lines, or None when rows are records.
        node_column: also give each row the id of the Ray node whose actor parsed it, in this
            column (None: no such column).
    """

    def __init__(self, parser: _batch.RecordParser, lines_column: str | None = None,
                 node_column: str | None = None) -> None:
        self.parser = parser
        self.lines_column = lines_column
        self.node_column = node_column
        self.node = None
        if node_column is not None:
            import ray

            self.node = ray.get_runtime_context().get_node_id()
        parser._load()  # once per actor

    def __call__(self, table: Any) -> dict[str, list]:
        """A pyarrow Table batch in; ``{"record": [JSON text, ...]}`` out (blank lines dropped)."""
        parser = self.parser
        if self.lines_column is not None:
            lines = table.column(self.lines_column).to_pylist()
            records = [parser.parse_line(line)[0] for line in lines if line is not None and line.strip()]
        else:
            records = [parser.parse_record(row)[0] for row in _batch._rows(table, parser.keys)]
        out = {"record": [_batch.dump_record(record) for record in records]}
        if self.node_column is not None:
            out[self.node_column] = [self.node] * len(records)
        return out


def parse_dataset(ds: Any, template: Any, *, lines_column: str | None = None,
                  keys: _batch.Keys | Mapping[str, str] | None = None, preset: str | None = None,
                  prefix: str | None = None, tools: list | None = None, errors: str = "recover",
                  batch_size: int = 256, actors: int | None = None, node_column: str | None = None,
                  **ray_args: Any) -> Any:
    """Parse every row of a Ray ``Dataset``; returns a lazy ``Dataset`` with one ``record`` column.

    Args:
        ds: a ``ray.data.Dataset``: raw JSONL lines in ``lines_column`` (``ray.data.read_text``), or
            records as columns (``ray.data.read_json``, ``from_pandas``, ...).
        template: anything :func:`respc.compile_template` accepts; compiled once, here.
        lines_column: the column of raw JSON lines (``"text"`` for ``read_text``), or None.
        keys, preset, prefix, tools, errors: as for :func:`respc.parse_batch`.
        batch_size: rows per batch given to an actor.
        actors: the most actors (default: the cluster's CPUs, ``ray.cluster_resources()["CPU"]``). The
            pool starts with one actor and grows while work is queued and CPUs are free, so the tasks
            that read the input still get CPUs (a fixed pool holding every CPU would starve them).
        node_column: a column name to also give each row the id of the node that parsed it (to see
            how the work spread over a cluster; ``tests/test_ray_nodes.py``), or None.
        **ray_args: passed to ``map_batches`` (``num_cpus`` defaults to 1 per actor; ``compute``
            replaces the pool).

    Returns:
        ray.data.Dataset: rows ``{"record": "<output record JSON>"}``; the order follows the input
        when ``DataContext.get_current().execution_options.preserve_order`` is set.

    Raises:
        TemplateError: bad template (at once); ImportError: Ray is not installed (extra ``ray``).
    """
    try:
        import ray
    except ImportError:
        raise ImportError('respc.ray needs Ray Data: pip install "respc[ray]"') from None
    parser = _batch.make_parser(template, keys=keys, preset=preset, prefix=prefix, tools=tools, errors=errors)
    if actors is None:
        actors = max(1, int(ray.cluster_resources().get("CPU", 1)))
    ray_args.setdefault("num_cpus", 1)
    ray_args.setdefault("compute", ray.data.ActorPoolStrategy(min_size=1, max_size=actors))
    return ds.map_batches(RayParser, fn_constructor_kwargs={"parser": parser, "lines_column": lines_column,
                                                          "node_column": node_column},
                          batch_format="pyarrow", batch_size=batch_size, **ray_args)
