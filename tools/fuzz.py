"""A fuzzing harness for the functions `tf2ir convert`, `tf2ir compile` and `tf2ir batch` call.

    python -m tf2ir.tools.fuzz --seconds 600 [--kind pb|pbtxt|ir|savedmodel|manifest|all]
                               [--seed S] [--jobs J] [--json report.json] [--save DIR]
    python -m tf2ir.tools.fuzz --replay DIR/crash-KeyError-ir_text.py-123.ir

The release check (issue 21): a 30-minute run over every kind, one worker, niced:

    nice -n 10 python -m tf2ir.tools.fuzz --seconds 1800 --kind all --seed 21 -j 1 \\
        --save /tmp/fuzz/release --json /tmp/fuzz/release.json

It prints one row per kind and a total row with the counts of cases and of each outcome
(ok, error, crash, hang, memory, abort, invalid, corrupt, escape), then one line per defect
group with its reproducer; the same numbers are in the JSON (`kinds.KIND.outcomes`,
`total.outcomes`, `groups`). Exit status 0: no defect; 1: some.

Five kinds of mutated input. pb, pbtxt and ir come from one seed corpus (tests/data/
sample_cnn.pb and about 190 small GraphDefs built here with tensorboard's compiled protos,
one or a few nodes each over the op types of docs/ops.md, plus their `--emit ir` files):

  pb     the .pb bytes: bit flips, interesting bytes, truncation, insertion, deletion,
         duplication and splicing of ranges, and edits of the wire structure (varint values,
         length prefixes, field numbers; fields dropped, repeated or moved between messages,
         lengths either kept consistent or broken);
  pbtxt  the parsed GraphDef: op types changed among the known ones, inputs rewired (ports,
         control inputs, cycles, missing names), nodes dropped, duplicated, renamed or
         spliced in from other seeds, attributes changed in kind and value, dtypes, shapes
         with huge, zero or negative dims, Const contents that disagree with their shape,
         functions and calls added; written as .pbtxt text (sometimes edited as text) or as
         a binary .pb;
  ir     the .ir text and its .ir.weights: lines deleted, repeated, swapped or taken from
         other seeds, tokens and numbers replaced, characters inserted, the weights file
         truncated, extended, altered or left out;
  savedmodel  a SavedModel directory (seeds made once with TensorFlow and cached: dense, conv,
         int64/string variables, a constant lookup table, a vocabulary-file table): its
         saved_model.pb mutated as bytes or as a message (graph, string constants such as
         RestoreV2's tensor names, signatures, asset file names with `..`, absolute paths,
         NULs), variables.index mutated as bytes or rewritten as a valid table with edited
         entries (negative and huge dims, dtypes, offsets, sizes, shards, crc32c, slices,
         non-UTF-8 or dropped keys, the header), shard bytes flipped, cut or grown, and files
         replaced by FIFOs, /dev/zero links, links leaving the directory, directories or
         nothing (tools/fuzz_saved_model.py); converted as `tf2ir convert DIR` by the native
         reader (--saved-model-reader auto: TensorFlow's route too, for what it refuses);
  manifest  a `tf2ir batch` manifest (JSON, YAML) in a sandbox, generated with wrong types,
         NULs, huge values, lone surrogates, YAML aliases, tags and merge keys, deep nesting,
         output paths with `..`, absolute paths and a symlinked folder, or a valid one mutated
         as text (tools/fuzz_manifest.py); run as `tf2ir batch MANIFEST -o out -j 1`.

Each case runs in a worker process (fork; one PluginManager per worker; batches of cases per
round trip) under a time limit (SIGALRM in the worker, SIGKILL from the parent at twice the
limit) and an address-space limit (RLIMIT_AS), with written files capped (RLIMIT_FSIZE).
A worker that dies or is killed is replaced; its case is classified. Outcomes:

  ok       converted (or compiled) and the written model passes
           onnx.checker.check_model(full_check=True)
  error    a clean tf2ir.ir.ConversionError (and no output or temporary file left behind)
  crash    any other exception (OSError included; the inputs are the harness's own files),
           grouped by exception type and the innermost tf2ir frame (file:line)
  hang     the case ran past the time limit (grouped by where it was interrupted)
  memory   MemoryError, a resource limit hit, or the worker killed
  abort    the worker died of SIGABRT (a C++ std::terminate, a pybind11 abort)
  invalid  a model was written that the checker rejects, or a file was left behind
           (manifest: a model batch reports ok that the checker rejects)
  corrupt  savedmodel: only checkpoint files were mutated (bytes TensorFlow checksums, or the
           index entries describing them), the conversion succeeded, and the model differs
           from the unmutated seed's conversion: TensorFlow refuses such a directory
           ("Checksum does not match"), tf2ir converted corrupted weights silently
  escape   savedmodel: the model holds the bytes of a canary file outside the SavedModel
           directory; manifest: a job's output or sidecar resolves outside -o (caught before
           it is written), or any file outside -o was created or changed

A manifest model that batch reports as "internal error: ..." is a crash (batch catches it).

One reproducer per defect group (the smallest seen) is saved under --save with a .json
sidecar (a SavedModel or manifest case: a folder NAME.savedmodel/ or NAME.manifest/, its
FIFOs and symlinks listed in NAME.json); `--replay FILE` runs it again in this process and
prints the traceback. No TensorFlow is imported, but to make the SavedModel seeds once.

This module is the command line (and the names tests import); the harness is split by concern:
  tools/fuzz_seeds.py   the built seed GraphDefs
  tools/fuzz_cases.py   the kinds and outcomes, the corpus, making a case, saved reproducers
  tools/fuzz_oracle.py  one case run under its limits and classified (run_case)
  tools/fuzz_driver.py  the worker processes, the run (Fuzzer), defect groups
  tools/fuzz_mutate.py  the pb mutations and their primitives; fuzz_mutate_graph.py the pbtxt
                        ones, fuzz_mutate_ir.py the ir ones
  tools/fuzz_core.py    what the harness and its modes share (protobuf values, the corpus type,
                        the defect exceptions, the checker)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
from typing import Any, Dict, Optional, Sequence

# The harness's names, importable from here as before the split.
from tf2ir.tools.fuzz_cases import (CONVERTER_OPS, DEFECTS, KINDS, OUTCOMES, ROOT,  # noqa: F401
                                    SAMPLE_CNN, TREES, Case, build_corpus, case_rng, load_case,
                                    make_case, save_case)
from tf2ir.tools.fuzz_core import (OUTPUT_NAME, BatchInternalError, CaseTimeout,  # noqa: F401
                                   Corpus, Escape, GraphBuilder, InvalidModel, SilentCorruption,
                                   _clean, check_model_file)
from tf2ir.tools.fuzz_driver import STAGES, Fuzzer, Group, KindStats  # noqa: F401
from tf2ir.tools.fuzz_oracle import (DEFAULT_FILE_MB, DEFAULT_MEMORY_MB,  # noqa: F401
                                     DEFAULT_TIME_LIMIT, FUZZ_MAX_TENSOR_BYTES, Config, Context,
                                     Result, _on_alarm, apply_limits, execute_case, normalize,
                                     run_case, tf2ir_frame)
from tf2ir.tools.fuzz_seeds import seed_graphs  # noqa: F401


# == the report =============================================================================
def format_report(report: Dict[str, Any], errors: int = 0) -> str:
    lines = [f"{'kind':<10} {'cases':>8} {'case s':>8} {'cases/s':>8} "
             + " ".join(f"{o:>7}" for o in OUTCOMES)]
    for kind, k in report["kinds"].items():
        lines.append(f"{kind:<10} {k['cases']:>8} {k['case_seconds']:>8.1f} "
                     f"{k['cases_per_second'] or 0:>8.1f} "
                     + " ".join(f"{k['outcomes'][o]:>7}" for o in OUTCOMES))
    t = report["total"]
    lines.append(f"{'total':<10} {t['cases']:>8} {report['wall_seconds']:>8.1f} "
                 f"{report['cases_per_second_wall'] or 0:>8.1f} "
                 + " ".join(f"{t['outcomes'][o]:>7}" for o in OUTCOMES)
                 + f"   (wall, {report['jobs']} job{'s' if report['jobs'] > 1 else ''})")
    for kind, k in report["kinds"].items():
        if k.get("multiline_errors"):
            lines.append(f"{kind}: {k['multiline_errors']} clean errors whose text is not one line, "
                         f"e.g. {k['multiline_examples'][0][0]}")
    if errors:
        for kind, k in report["kinds"].items():
            lines.append(f"most common clean errors, {kind}:")
            lines.extend(f"  {n:>7}  {m}" for m, n in k["top_errors"][:errors])
    groups = report["groups"]
    lines.append(f"{len(groups)} defect group{'s' if len(groups) != 1 else ''}")
    for g in groups:
        kinds = ",".join(sorted(g["kinds"]))
        lines.append(f"  {g['outcome']:<7} {g['type']} at {g['where']}"
                     f"{' (' + g['function'] + ')' if g['function'] else ''}  ×{g['count']} [{kinds}]")
        lines.append(f"          {g['message']}")
        if g["reproducer"]:
            lines.append(f"          {g['reproducer']}")
    return "\n".join(lines)




# == replay =================================================================================
def replay(paths: Sequence[str], config: Config) -> int:
    """Run saved cases in this process (time and memory limits applied); print each outcome
    with its traceback. Exit status 1 when any is a defect."""
    signal.signal(signal.SIGALRM, _on_alarm)
    apply_limits(config.memory_mb, config.file_mb)
    status = 0
    with tempfile.TemporaryDirectory(prefix="tf2ir-replay-") as workdir:
        ctx = Context(workdir)
        ctx.saved_model_reader = config.saved_model_reader
        for path in paths:
            case = load_case(path)
            result = run_case(case, execute_case, ctx, config.time_limit, full_traceback=True)
            _clean(workdir)
            print(f"{path}: {result.outcome} ({result.seconds:.2f} s)")
            if result.detail:
                d = result.detail
                print(f"  {d['type']} at {d['frame']} {d['function']}: {d['message']}")
                if d.get("traceback"):
                    print("  " + d["traceback"].rstrip().replace("\n", "\n  "))
            elif result.error:
                print(f"  clean error: {result.error}")
            if result.outcome in DEFECTS:
                status = 1
    return status


# == command line ===========================================================================
def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tf2ir.tools.fuzz",
        description="Fuzz tf2ir's convert, compile and batch with mutated .pb, .pbtxt and .ir "
                    "files, SavedModel directories (savedmodel) and batch manifests (manifest).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""outcomes counted per kind (the report's columns):
  ok, error      converted, or a clean one-line ConversionError (not defects)
  crash          any other exception; for manifests also batch's "internal error"
  hang           past --time-limit;  memory: MemoryError or a resource limit
  abort          the worker died of SIGABRT (C++ terminate)
  invalid        a model written with success that onnx.checker rejects, or a file left
  corrupt        savedmodel: a checkpoint mutation TensorFlow's checksums refuse converted
                 to a model unlike the seed's (silent corruption)
  escape         savedmodel: a file outside the directory read into the model;
                 manifest: a file written (or about to be) outside -o

the 30-minute release run (every kind, one worker):
  nice -n 10 python -m tf2ir.tools.fuzz --seconds 1800 --kind all --seed 21 -j 1 \\
      --save /tmp/fuzz/release --json /tmp/fuzz/release.json

Exit status: 0 no defect, 1 defects found (any outcome but ok and error), 2 usage.""")
    parser.add_argument("--seconds", type=float, help="run this long (wall clock)")
    parser.add_argument("--cases", type=int, help="or run this many cases of each kind")
    parser.add_argument("--kind", default="all",
                        help="pb, pbtxt, ir, savedmodel, manifest, all, or a comma-separated list "
                             "(default all)")
    parser.add_argument("--seed", type=int, default=0, help="run seed (cases are reproducible)")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--json", metavar="FILE", help="write the report as JSON")
    parser.add_argument("--save", metavar="DIR",
                        help="reproducers, one per defect group (default /tmp/fuzz/seed<SEED>)")
    parser.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT,
                        help=f"seconds per case (default {DEFAULT_TIME_LIMIT:g})")
    parser.add_argument("--memory-mb", type=int, default=DEFAULT_MEMORY_MB,
                        help=f"address-space limit of a worker (default {DEFAULT_MEMORY_MB})")
    parser.add_argument("--file-mb", type=int, default=DEFAULT_FILE_MB,
                        help=f"largest file a case may write (default {DEFAULT_FILE_MB})")
    parser.add_argument("--corpus", action="append", default=[], metavar="PATH",
                        help="more seed graphs (.pb/.pbtxt files or folders of them)")
    parser.add_argument("--saved-model-reader", choices=("native", "auto"), default="native",
                        help="savedmodel cases: the native reader only (default), or auto: "
                             "TensorFlow freezes what it refuses, as `tf2ir convert` does "
                             "(TensorFlow is imported in each worker before its first case)")
    parser.add_argument("--errors", type=int, default=0, metavar="N",
                        help="also list the N most common clean errors per kind")
    parser.add_argument("--replay", nargs="+", metavar="FILE",
                        help="run saved reproducers in this process and print tracebacks")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    config = Config(args.seed, args.time_limit or None, args.memory_mb or None, args.file_mb or None,
                    saved_model_reader=args.saved_model_reader)
    if args.replay:
        return replay(args.replay, config)
    if args.seconds is None and args.cases is None:
        parser.error("give --seconds N or --cases N (or --replay FILE)")
    kinds = list(KINDS) if args.kind == "all" else [k.strip() for k in args.kind.split(",")]
    for kind in kinds:
        if kind not in KINDS:
            parser.error(f"unknown --kind {kind!r}; choose from {', '.join(KINDS)} or all")
    save = args.save or os.path.join(tempfile.gettempdir(), "fuzz", f"seed{args.seed}")
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    from tf2ir.plugins.manager import PluginManager
    corpus = build_corpus(PluginManager(), args.corpus, kinds)
    if "savedmodel" in kinds and not corpus.saved_models:
        parser.error("--kind savedmodel needs its seed SavedModels, which are made once with "
                     "TensorFlow (not importable here)")
    if progress:
        progress(f"corpus: {len(corpus.graphs)} graphs, {len(corpus.irs)} IR files, "
                 f"{len(corpus.saved_models)} SavedModels; "
                 f"kinds {','.join(kinds)}, seed {args.seed}, {args.jobs} job(s); reproducers in {save}")
    fuzzer = Fuzzer(kinds, args.seed, args.jobs, config, save, corpus, progress=progress)
    fuzzer.run(seconds=args.seconds, cases=args.cases)
    report = fuzzer.report()
    print(format_report(report, args.errors))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
    return 1 if fuzzer.defects() else 0


if __name__ == "__main__":
    # `python -m` runs this file as __main__, beside no tf2ir.tools.fuzz: run_case and the
    # exception classes it catches come from the split modules, as the modes' do
    sys.exit(main())
