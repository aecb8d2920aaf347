#!/usr/bin/env python3
"""Upstream, writer and downstream of lakewap, played by clients lakewap did not write.

- confluent-kafka (librdkafka) produces BatchLanded and WriteComplete in the
  documented wire format: Avro single-object encoding, i.e. C3 01, the 8-byte
  little-endian CRC-64-AVRO fingerprint of the schema's Parsing Canonical Form,
  then the Avro body. Bodies and fingerprints come from fastavro and the
  published schemas (schemas/*.avsc), nothing from lakewap's Go code.
- lakefs-sdk uploads a Parquet file made by pyarrow to the branch that
  BranchReady named.
- a confluent-kafka consumer reads every partition of the results topic from
  the beginning and decodes each value with the same schemas, checking the
  magic bytes, the fingerprint, the wap.event_type header and that the body is
  consumed exactly.

Two batches: GOOD (1000 rows) should be published; BAD (1000 rows, 40 of them
with a NULL billing_id) should be aborted by the not_null audit. The script
prints one JSON document on stdout (what it produced, wrote and decoded) and
exits 0 once both batches have a final result event and every result event up
to the topics' end has been read; it exits 1 on timeout or a client error.
The Go test (tests/interop_test.go) judges the outcome.
"""

import argparse
import datetime
import io
import json
import os
import struct
import sys
import tempfile
import time
import traceback
import uuid

import confluent_kafka
import fastavro
import lakefs_sdk
import pyarrow
import pyarrow.parquet as pq
from cloudevents.core.bindings import kafka as cloudevents_kafka
from cloudevents.core.formats.json import JSONFormat
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from fastavro.schema import expand_schema, fingerprint, to_parsing_canonical_form

NAMESPACE = "io.lakewap.events"
MAGIC = b"\xc3\x01"
HEADER = 10  # magic + 8-byte fingerprint
FINAL = ("BatchPublished", "BatchAborted", "BatchFailed")
# Named types other schemas refer to: parsed first.
SHARED = ("AuditReport",)


def log(msg):
    print(f"interop.py: {msg}", file=sys.stderr, flush=True)


class Schemas:
    """The published schemas, by event type and by single-object fingerprint."""

    def __init__(self, directory):
        named = {}
        files = sorted(f[:-5] for f in os.listdir(directory) if f.endswith(".avsc"))
        order = [n for n in SHARED if n in files] + [n for n in files if n not in SHARED]
        self.by_type, self.by_fp = {}, {}
        for name in order:
            with open(os.path.join(directory, name + ".avsc")) as f:
                parsed = fastavro.parse_schema(json.load(f), named_schemas=named)
            if name in SHARED:
                continue
            # The fingerprint is of the self-contained schema: named types
            # referenced by name are inlined, as a reader without our schema
            # directory would see them.
            full = expand_schema(parsed)
            fp = bytes.fromhex(fingerprint(to_parsing_canonical_form(full), "CRC-64-AVRO"))
            self.by_type[name] = (full, fp)
            self.by_fp[fp] = (name, full)

    def encode(self, event_type, record):
        schema, fp = self.by_type[event_type]
        body = io.BytesIO()
        fastavro.schemaless_writer(body, schema, record)
        return MAGIC + fp + body.getvalue()

    def decode(self, value):
        """Returns (event type, fingerprint hex, record); raises ValueError."""
        if len(value) < HEADER or value[:2] != MAGIC:
            raise ValueError(f"not single-object encoded: starts with {value[:2].hex()!r}")
        fp = value[2:HEADER]
        if fp not in self.by_fp:
            raise ValueError(f"unknown fingerprint {fp.hex()} (little-endian bytes)")
        name, schema = self.by_fp[fp]
        body = io.BytesIO(value[HEADER:])
        record = fastavro.schemaless_reader(body, schema, schema)
        rest = len(value) - HEADER - body.tell()
        if rest:
            raise ValueError(f"{name}: {rest} bytes left after the record")
        return name, struct.unpack("<Q", fp)[0], record


def jsonable(v):
    if isinstance(v, datetime.datetime):
        return v.isoformat()
    if isinstance(v, dict):
        return {k: jsonable(x) for k, x in v.items()}
    if isinstance(v, list):
        return [jsonable(x) for x in v]
    return v


def billing_rows(n, null_ids):
    """n billing rows; the first null_ids have no billing_id."""
    ids = [None if i < null_ids else f"b-{i:05d}" for i in range(n)]
    return pyarrow.table({
        "billing_id": pyarrow.array(ids, pyarrow.string()),
        "customer_id": pyarrow.array([f"c-{i % 97:03d}" for i in range(n)], pyarrow.string()),
        "amount_cents": pyarrow.array([100 + i for i in range(n)], pyarrow.int64()),
        "currency": pyarrow.array(["EUR"] * n, pyarrow.string()),
    })


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--lakefs", required=True, help="lakeFS endpoint, e.g. http://127.0.0.1:8000")
    ap.add_argument("--access-key-id", required=True)
    ap.add_argument("--repository", required=True)
    ap.add_argument("--topics", required=True, help="INPUT,RESULTS topic names")
    ap.add_argument("--schemas", required=True, help="directory of the published .avsc files")
    ap.add_argument("--dataset", default="billing")
    ap.add_argument("--table-path", default="gold/billing_fact/")
    ap.add_argument("--good", default="py-good-1")
    ap.add_argument("--bad", default="py-bad-1")
    ap.add_argument("--timeout", type=float, default=120, help="seconds")
    args = ap.parse_args()
    secret = os.environ.get("LAKEFS_SECRET_ACCESS_KEY")
    if not secret:
        ap.error("LAKEFS_SECRET_ACCESS_KEY must be set")
    input_topic, results_topic = args.topics.split(",")
    deadline = time.monotonic() + args.timeout

    schemas = Schemas(args.schemas)
    lake = lakefs_sdk.ApiClient(lakefs_sdk.Configuration(
        host=args.lakefs.rstrip("/") + "/api/v1", username=args.access_key_id, password=secret))
    objects = lakefs_sdk.ObjectsApi(lake)

    out = {
        "clients": {
            "confluent_kafka": confluent_kafka.__version__,
            "librdkafka": confluent_kafka.libversion()[0],
            "fastavro": fastavro.__version__,
            "lakefs_sdk": lakefs_sdk.__version__,
            "pyarrow": pyarrow.__version__,
            "python": sys.version.split()[0],
        },
        "produced": [], "writes": [], "results": [], "undecodable": [], "outcomes": {},
    }

    delivery_errors = []

    producer = Producer({
        "bootstrap.servers": args.brokers,
        "acks": "all",
        "enable.idempotence": True,
        # Java's partitioner, as lakewap's own tools use: a batch's events
        # land on one partition, in order.
        "partitioner": "murmur2_random",
    })

    def produce(event_type, record):
        key = record["batch_id"].encode()
        value = schemas.encode(event_type, record)
        sent = {"type": event_type, "batch_id": record["batch_id"], "fingerprint": value[2:HEADER].hex()}
        out["produced"].append(sent)

        def delivered(err, msg):
            if err is not None:
                delivery_errors.append(str(err))
            else:
                sent.update(partition=msg.partition(), offset=msg.offset())

        producer.produce(input_topic, key=key, value=value, on_delivery=delivered,
                         headers=[("wap.event_type", event_type.encode()), ("wap.batch_id", key)])
        left = producer.flush(max(0.1, deadline - time.monotonic()))
        if left or delivery_errors:
            raise RuntimeError(f"produce {event_type} of {record['batch_id']}: "
                               f"{left} undelivered, errors {delivery_errors}")

    consumer = Consumer({
        "bootstrap.servers": args.brokers,
        # Partitions are assigned by hand and nothing is committed; librdkafka
        # still wants a group id.
        "group.id": "lakewap-interop-" + uuid.uuid4().hex[:8],
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    })
    md = consumer.list_topics(results_topic, timeout=max(1, deadline - time.monotonic()))
    tmd = md.topics.get(results_topic)
    if tmd is None or tmd.error is not None or not tmd.partitions:
        raise RuntimeError(f"results topic {results_topic}: {tmd.error if tmd else 'missing'}")
    partitions = sorted(tmd.partitions)
    consumer.assign([TopicPartition(results_topic, p, confluent_kafka.OFFSET_BEGINNING) for p in partitions])

    batches = {args.good: 0, args.bad: 40}
    now = datetime.datetime.now(datetime.timezone.utc)
    for batch in batches:
        produce("BatchLanded", {
            "batch_id": batch, "dataset": args.dataset, "source_ref": "",
            "expected_writes": ["billing_fact"], "write_deadline": None,
            "attributes": {"client": "confluent-kafka-python"}, "producer": "interop.py",
            "occurred_at": now,
        })
    log(f"BatchLanded sent for {', '.join(batches)}")

    written = set()
    while set(out["outcomes"]) != set(batches):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no final result for {sorted(set(batches) - set(out['outcomes']))} "
                               f"after {args.timeout}s; result events so far: "
                               f"{[(r['type'], r['batch_id']) for r in out['results']]}; "
                               f"undecodable: {out['undecodable']}")
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            raise KafkaException(msg.error())
        ev = record_result(schemas, msg, out)
        if ev is None or ev["batch_id"] not in batches:
            continue
        batch, rec = ev["batch_id"], ev["record"]
        if ev["type"] == "BranchReady" and batch not in written:
            written.add(batch)
            path = f"{args.table_path}batch={batch}/part-0.parquet"
            # lakefs-sdk uploads "content" from a file path.
            with tempfile.TemporaryDirectory() as tmp:
                local = os.path.join(tmp, "part-0.parquet")
                pq.write_table(billing_rows(1000, batches[batch]), local)
                stats = objects.upload_object(args.repository, rec["branch"], path, content=local)
            out["writes"].append({"batch_id": batch, "branch": rec["branch"], "path": path, "rows": 1000,
                                  "null_ids": batches[batch], "checksum": stats.checksum})
            log(f"{batch}: wrote {path} to branch {rec['branch']} with lakefs-sdk")
            produce("WriteComplete", {
                "batch_id": batch, "dataset": args.dataset, "write": "billing_fact", "paths": [path],
                "row_count": 1000, "occurred_at": datetime.datetime.now(datetime.timezone.utc),
            })
        elif ev["type"] in FINAL and batch not in out["outcomes"]:
            report = rec.get("report") or {}
            out["outcomes"][batch] = {
                "type": ev["type"], "branch": rec.get("branch"), "reason": rec.get("reason", ""),
                "commit_id": rec.get("commit_id", ""), "branch_kept": rec.get("branch_kept"),
                "passed": report.get("passed"),
                "failed_checks": [c["name"] for c in report.get("checks", []) if c["status"] in ("fail", "error")],
            }
            log(f"{batch}: {ev['type']}")

    # Every result event up to the end of each partition, not only ours.
    ends = {}
    for p in partitions:
        _, high = consumer.get_watermark_offsets(TopicPartition(results_topic, p), timeout=10)
        ends[p] = high
    seen = {p: -1 for p in partitions}
    for r in out["results"] + out["undecodable"]:
        seen[r["partition"]] = max(seen[r["partition"]], r["offset"])
    while any(seen[p] < ends[p] - 1 for p in partitions):
        if time.monotonic() > deadline:
            raise TimeoutError(f"results topic not read to its end {ends}: at {seen}")
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            raise KafkaException(msg.error())
        record_result(schemas, msg, out)
        seen[msg.partition()] = max(seen[msg.partition()], msg.offset())
    out["results_end_offsets"] = {str(p): ends[p] for p in partitions}
    consumer.close()
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


def record_result(schemas, msg, out):
    """Decodes one result message into out; returns it or None if undecodable."""
    where = {"partition": msg.partition(), "offset": msg.offset()}
    headers = dict(msg.headers() or [])
    try:
        ce = cloudevents_kafka.from_binary(
            cloudevents_kafka.KafkaMessage(headers=headers, key=msg.key(), value=msg.value()), JSONFormat())
        data = ce.get_data()
        if not isinstance(data, bytes):
            raise ValueError(f"CloudEvent data is {type(data).__name__}, want the Avro bytes")
        name, fp, rec = schemas.decode(data)
        header_type = headers.get("wap.event_type", b"").decode()
        if header_type != name:
            raise ValueError(f"header wap.event_type {header_type!r}, value is {name}")
        if msg.key() is not None and msg.key().decode() != rec["batch_id"]:
            raise ValueError(f"key {msg.key()!r}, batch_id {rec['batch_id']!r}")
    except Exception as e:  # noqa: BLE001 - every failure is a finding to report
        out["undecodable"].append({**where, "error": f"{type(e).__name__}: {e}"})
        return None
    ev = {**where, "type": name, "batch_id": rec["batch_id"], "fingerprint": f"{fp:016x}",
          "record": jsonable(rec),
          "cloudevent": {"specversion": ce.get_specversion(), "id": ce.get_id(), "type": ce.get_type(),
                         "source": ce.get_source(), "subject": ce.get_subject(),
                         "datacontenttype": ce.get_datacontenttype(),
                         "time": ce.get_time().isoformat() if ce.get_time() else None}}
    out["results"].append(ev)
    return ev


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        log(f"failed: {type(e).__name__}: {e}")
        sys.exit(1)
