#!/usr/bin/env python3
"""Reads lakewap's results topic and prints one line per event.

Each line is the event type, dataset/batch, then key=value pairs:

  BranchReady billing/2024-06-01 branch=wap-billing-2024-06-01
  BatchPublished billing/2024-06-01 target=main commit=9f3c... checks=5 passed=true
  BatchAborted billing/2024-06-02 reason=audit_failed failed=billing_id_not_null:40/1000 branch=wap-billing-2024-06-02 kept=true

A real downstream job would act here instead: refresh a dashboard on BatchPublished, page someone
on BatchAborted. lakewap may send an outcome twice (after a crash); both copies carry the same
event_id, so duplicates are dropped by it.

  consumer.py --brokers localhost:9092 --from-beginning
"""

import argparse
import collections
import os
import sys
import uuid

from confluent_kafka import Consumer, KafkaException

from lakewap_events import DEFAULT_SCHEMAS, Events


def describe(name, e):
    """One line for an event: what a downstream job acts on."""
    line = [name, f"{e['dataset']}/{e['batch_id']}"]
    if name == "BranchReady":
        line.append(f"branch={e['branch']}")
    elif name == "BatchPublished":
        report = e["report"]
        line += [f"target={e['target_ref']}", f"commit={e['commit_id']}",
                 f"checks={len(report['checks'])}", f"passed={str(report['passed']).lower()}"]
    elif name == "BatchAborted":
        line.append(f"reason={e['reason']}")
        if e["report"] is not None:
            line.append("failed=" + ",".join(failed_checks(e["report"])))
        line += [f"branch={e['branch']}", f"kept={str(e['branch_kept']).lower()}"]
    elif name == "BatchFailed":
        line += [f"state={e['state']}", f"branch={e['branch']}", f"error=\"{e['error']}\""]
    elif name == "BatchReverted":
        line += [f"target={e['target_ref']}", f"commit={e['commit_id']}", f"by={e['reverted_by']}"]
    elif name == "RequestRefused":
        line += [f"request={e['request_type']}", f"reason={e['reason']}"]
    return " ".join(line)


def failed_checks(report):
    """The checks that blocked the batch, as name:failures/rows_checked (the counts where known)."""
    out = []
    for c in report["checks"]:
        if c["status"] not in ("fail", "error"):
            continue
        s = c["name"]
        if c.get("failures") is not None:
            s += f":{c['failures']}"
            if c.get("rows_checked") is not None:
                s += f"/{c['rows_checked']}"
        out.append(s)
    return out


def at_end(consumer):
    """True once the consumer has partitions and has read each to its end."""
    assigned = consumer.assignment()
    if not assigned:
        return False
    for tp in consumer.position(assigned):
        low, high = consumer.get_watermark_offsets(tp, timeout=10)
        # No position yet: nothing read, so the consumer starts at the low watermark.
        if (tp.offset if tp.offset >= 0 else low) < high:
            return False
    return True


def main():
    env = os.environ.get
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--brokers", default=env("LAKEWAP_BROKERS", "localhost:9092"), help="env LAKEWAP_BROKERS")
    ap.add_argument("--topic", default=env("LAKEWAP_RESULTS_TOPIC", "wap.results"), help="env LAKEWAP_RESULTS_TOPIC")
    ap.add_argument("--group", default=env("LAKEWAP_GROUP", "lakewap-results-" + uuid.uuid4().hex[:8]),
                    help="consumer group (env LAKEWAP_GROUP; a new one per run)")
    ap.add_argument("--schemas", default=env("LAKEWAP_SCHEMAS", DEFAULT_SCHEMAS), help="lakewap's schemas/ (env LAKEWAP_SCHEMAS)")
    ap.add_argument("--from-beginning", action="store_true", help="read from the topic's start when the group has no offsets")
    ap.add_argument("--exit-at-end", action="store_true", help="stop once every partition has been read to its end")
    args = ap.parse_args()
    events = Events(args.schemas)

    consumer = Consumer({
        "bootstrap.servers": args.brokers, "group.id": args.group,
        "auto.offset.reset": "earliest" if args.from_beginning else "latest",
        # At least once: an offset is stored for commit only after its event was handled.
        "enable.auto.offset.store": False,
    })
    consumer.subscribe([args.topic])
    seen = collections.OrderedDict()  # the last 10000 event ids
    try:
        while True:
            msg = consumer.poll(0.5)
            if msg is None:
                # Nothing new for now: the moment to see whether the end is reached.
                if args.exit_at_end and at_end(consumer):
                    break
                continue
            if msg.error():
                raise KafkaException(msg.error())
            try:
                name, event = events.decode(msg.value())
            except ValueError as e:
                print(f"skipping {msg.topic()}-{msg.partition()}@{msg.offset()}: {e}", file=sys.stderr)
            else:
                if event["event_id"] not in seen:
                    seen[event["event_id"]] = True
                    if len(seen) > 10000:
                        seen.popitem(last=False)
                    print(describe(name, event), flush=True)
            consumer.store_offsets(msg)
    finally:
        consumer.close()  # commits the stored offsets


if __name__ == "__main__":
    main()
