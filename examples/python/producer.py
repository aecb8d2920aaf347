#!/usr/bin/env python3
"""Hands one batch to lakewap: announce it, write its file where lakewap says, say the write is done.

  1. BatchLanded on the input topic: lakewap opens a lakeFS branch for the batch;
  2. wait on the results topic for BranchReady, which names the branch (and its s3:// URI);
  3. upload --file through lakeFS's S3 gateway (boto3) to that branch, at --path;
  4. WriteComplete: lakewap audits the branch, then publishes it to the target or aborts it.

The outcome (BatchPublished, BatchAborted, ...) comes later on the results topic: see consumer.py.

  AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... \\
  producer.py --brokers localhost:9092 --s3-endpoint http://localhost:8000 \\
      --dataset billing --batch 2024-06-01 --write billing_fact \\
      --file day.parquet --path gold/billing_fact/date=2024-06-01/part-0.parquet

The AWS_* variables are a lakeFS access key (the S3 gateway takes lakeFS keys).
"""

import argparse
import datetime
import os
import sys
import time
from urllib.parse import urlparse

import boto3
from botocore.config import Config
from confluent_kafka import Consumer, Producer, TopicPartition

from lakewap_events import DEFAULT_SCHEMAS, Events, headers

# Outcomes that mean lakewap will not open a branch for this batch.
ENDED = ("BatchAborted", "BatchFailed")


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def main():
    env = os.environ.get
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--brokers", default=env("LAKEWAP_BROKERS", "localhost:9092"), help="env LAKEWAP_BROKERS")
    ap.add_argument("--input-topic", default=env("LAKEWAP_INPUT_TOPIC", "wap.events"), help="env LAKEWAP_INPUT_TOPIC")
    ap.add_argument("--results-topic", default=env("LAKEWAP_RESULTS_TOPIC", "wap.results"), help="env LAKEWAP_RESULTS_TOPIC")
    ap.add_argument("--schemas", default=env("LAKEWAP_SCHEMAS", DEFAULT_SCHEMAS), help="lakewap's schemas/ (env LAKEWAP_SCHEMAS)")
    ap.add_argument("--s3-endpoint", default=env("AWS_ENDPOINT_URL"), help="lakeFS's URL, which serves its S3 gateway (env AWS_ENDPOINT_URL)")
    ap.add_argument("--dataset", required=True, help="a dataset of lakewap's config")
    ap.add_argument("--batch", required=True, help="the batch id: letters, digits and - _ . : + @")
    ap.add_argument("--write", required=True, help="the write this producer does (the batch's one expected write)")
    ap.add_argument("--file", required=True, help="local file to upload")
    ap.add_argument("--path", required=True, help="where in the branch, e.g. gold/billing_fact/date=2024-06-01/part-0.parquet")
    ap.add_argument("--timeout", type=float, default=120, help="seconds to wait for BranchReady")
    args = ap.parse_args()
    events = Events(args.schemas)

    # Java's partitioner (murmur2): lakewap expects a batch's events on the partition Kafka's default
    # partitioner gives its key. librdkafka's own default would pick another.
    producer = Producer({"bootstrap.servers": args.brokers, "acks": "all", "enable.idempotence": True,
                         "partitioner": "murmur2_random"})

    def send(name, record):
        failed = []
        producer.produce(args.input_topic, key=args.batch.encode(), value=events.encode(name, record),
                         headers=headers(name, args.batch), on_delivery=lambda err, _msg: err and failed.append(err))
        if producer.flush(30) or failed:
            sys.exit(f"producer.py: sending {name}: {failed or 'not delivered in 30s'}")
        print(f"sent {name} {args.dataset}/{args.batch}", flush=True)

    # Read the results from their current end before announcing the batch, so BranchReady is not missed.
    results = Consumer({"bootstrap.servers": args.brokers, "group.id": "lakewap-producer-example",
                        "enable.auto.commit": False})
    start = []
    for p in results.list_topics(args.results_topic, timeout=30).topics[args.results_topic].partitions:
        _, end = results.get_watermark_offsets(TopicPartition(args.results_topic, p), timeout=30)
        start.append(TopicPartition(args.results_topic, p, end))
    results.assign(start)

    send("BatchLanded", {
        "batch_id": args.batch, "dataset": args.dataset, "source_ref": "", "expected_writes": [args.write],
        "write_deadline": None, "attributes": {}, "producer": "producer.py", "occurred_at": now(),
    })

    ready = wait_for_branch(results, events, args)
    results.close()
    u = urlparse(ready["s3_uri"])  # s3://<repository>/<branch>/
    key = u.path.lstrip("/") + args.path
    # Path-style addressing: the repository is the bucket, the branch the first part of the key.
    s3 = boto3.client("s3", endpoint_url=args.s3_endpoint, region_name=os.environ.get("AWS_REGION", "us-east-1"),
                      config=Config(s3={"addressing_style": "path"}))
    s3.upload_file(args.file, u.netloc, key)
    print(f"wrote s3://{u.netloc}/{key}", flush=True)

    send("WriteComplete", {
        "batch_id": args.batch, "dataset": args.dataset, "write": args.write, "paths": [args.path],
        "row_count": None, "occurred_at": now(),
    })


def wait_for_branch(results, events, args):
    """The batch's BranchReady record; exits if lakewap ends the batch first (an unknown dataset, ...)."""
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        msg = results.poll(0.5)
        if msg is None or msg.error() or msg.key() != args.batch.encode():
            continue
        name, record = events.decode(msg.value())
        if record["dataset"] != args.dataset:
            continue
        if name == "BranchReady":
            print(f"branch {record['branch']} is ready", flush=True)
            return record
        if name in ENDED:
            sys.exit(f"producer.py: lakewap ended the batch: {name} {record.get('reason', '')} {record.get('detail', '')}")
    sys.exit(f"producer.py: no BranchReady for {args.dataset}/{args.batch} within {args.timeout}s")


if __name__ == "__main__":
    main()
