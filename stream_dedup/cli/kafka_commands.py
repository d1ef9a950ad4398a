"""The commands that talk to Kafka: `run`, `stage`, `produce`, `topics` and `demo`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..config import Settings


def _with_bootstrap(settings: Settings, bootstrap: str | None) -> Settings:
    from dataclasses import replace

    if not bootstrap:
        return settings
    return replace(settings, kafka=replace(settings.kafka, bootstrap_servers=bootstrap))


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    from ..runtime.run import serve

    serve(settings, args.state)
    return 0


def cmd_stage(args: argparse.Namespace, settings: Settings) -> int:
    from dataclasses import replace

    from ..runtime.stage import run_stage
    from ..scale.stages import check_scope

    check_scope(settings)
    if args.state:
        settings = replace(settings, state=replace(settings.state, path=args.state))
    if args.stage == "fingerprint":
        from ..scale.fingerprint_stage import FingerprintStage as make
    elif args.stage == "index":
        from ..scale.index_stage import IndexStage as make
    else:
        from ..scale.decide_stage import DecideStage as make
    run_stage(settings, make(settings))
    return 0


def cmd_produce(args: argparse.Namespace, settings: Settings) -> int:
    from ..kafka.produce import produce_file

    k = _with_bootstrap(settings, args.bootstrap).kafka
    topic = args.topic or k.input_topics[0]
    sent = produce_file(args.input, topic, k, settings.input.id_field,
                        args.rate, lambda n: print(f"{n:,} records sent", file=sys.stderr))
    print(f"{sent.records:,} records to {topic} in {sent.seconds:.1f} s "
          f"({sent.rate:,.0f} records/s)", file=sys.stderr)
    return 0


def cmd_topics(args: argparse.Namespace, settings: Settings) -> int:
    from ..kafka.topics import create_topics

    k = _with_bootstrap(settings, args.bootstrap).kafka
    t = settings.topology
    staged = {t.probes_topic: t.probes_partitions, t.answers_topic: t.join_partitions,
              t.originals_topic: t.join_partitions} if settings.scale.scope == "global" else {}
    for name, status in create_topics(k, args.partitions, staged).items():
        print(f"{name}: {status}")
    return 0


def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    from ..tools.demo import default_input, run_demo

    run_demo(settings, args.config, Path(args.input) if args.input else default_input(),
             args.port, args.keep_running, args.rate, args.json, sys.stdout, sys.stderr)
    return 0

