"""lakewap's events on the wire, with fastavro and the schemas lakewap publishes (its schemas/*.avsc).

Without a schema registry a value is Avro single-object encoding: C3 01, the 8-byte CRC-64-AVRO
fingerprint of the schema's Parsing Canonical Form (named types inlined), then the Avro body. The
headers wap.event_type (the record name) and wap.batch_id go with every message, keyed by batch id.
With a schema registry lakewap uses the Confluent wire format instead: use confluent-kafka's
AvroSerializer and AvroDeserializer there.
"""

import io
import json
import os

import fastavro
from fastavro.schema import expand_schema, fingerprint, to_parsing_canonical_form

MAGIC = b"\xc3\x01"
HEADER_LEN = len(MAGIC) + 8
DEFAULT_SCHEMAS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "schemas")


class Events:
    """Encodes and decodes lakewap's events by record name (BatchLanded, BatchPublished, ...)."""

    def __init__(self, schema_dir=DEFAULT_SCHEMAS):
        names = sorted(f[:-5] for f in os.listdir(schema_dir) if f.endswith(".avsc"))
        if not names:
            raise ValueError(f"no .avsc files in {schema_dir}: point --schemas at lakewap's schemas/")
        # AuditReport first: BatchPublished and BatchAborted refer to it by name.
        names.sort(key=lambda n: n != "AuditReport")
        named = {}
        self._by_name, self._by_fingerprint = {}, {}
        for name in names:
            schema = _load(os.path.join(schema_dir, name + ".avsc"), named)
            fp = _fingerprint(schema)
            self._by_name[name] = (schema, fp)
            self._by_fingerprint[fp] = (name, schema, schema)
        # Older versions (self-contained files) of the current schemas: events lakewap wrote before an
        # upgrade still decode, read into the current schema (new fields at their defaults).
        history = os.path.join(schema_dir, "history")
        for f in sorted(os.listdir(history)) if os.path.isdir(history) else []:
            if f.endswith(".avsc"):
                writer = _load(os.path.join(history, f), {})
                name = writer["name"].rsplit(".", 1)[-1]
                if name in self._by_name:
                    self._by_fingerprint[_fingerprint(writer)] = (name, writer, self._by_name[name][0])

    def encode(self, name, record):
        """The message value for an event named name (a dict with the schema's fields)."""
        schema, fp = self._by_name[name]
        body = io.BytesIO()
        fastavro.schemaless_writer(body, schema, record)
        return MAGIC + fp + body.getvalue()

    def decode(self, value):
        """(record name, record) of a message value; ValueError if it is not one of ours."""
        if value is None or len(value) < HEADER_LEN or value[:2] != MAGIC:
            raise ValueError("not Avro single-object encoding (a registry's Confluent framing starts with 00)")
        found = self._by_fingerprint.get(value[2:HEADER_LEN])
        if found is None:
            raise ValueError(f"unknown schema fingerprint {value[2:HEADER_LEN].hex()}: newer schemas?")
        name, writer, reader = found
        return name, fastavro.schemaless_reader(io.BytesIO(value[HEADER_LEN:]), writer, reader)


def _load(path, named):
    with open(path) as f:
        return expand_schema(fastavro.parse_schema(json.load(f), named_schemas=named))


def _fingerprint(schema):
    return bytes.fromhex(fingerprint(to_parsing_canonical_form(schema), "CRC-64-AVRO"))


def headers(name, batch_id):
    """The headers lakewap wants on every input event."""
    return [("wap.event_type", name.encode()), ("wap.batch_id", batch_id.encode())]
