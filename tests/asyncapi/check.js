// Parses an AsyncAPI document with @asyncapi/parser (and its Avro schema
// parser, so the messages' Avro schemas are checked too) and prints what it
// found as JSON: the diagnostics, and the channels with their addresses and
// message names. Run by tests/asyncapi_test.go: node check.js FILE.
const fs = require('fs');
const { Parser } = require('@asyncapi/parser');
const { AvroSchemaParser } = require('@asyncapi/avro-schema-parser');

async function main() {
  const parser = new Parser();
  parser.registerSchemaParser(AvroSchemaParser());
  const { document, diagnostics } = await parser.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const out = {
    // severity 0 is an error, 1 a warning, 2 information, 3 a hint
    diagnostics: diagnostics.map((d) => ({ severity: d.severity, code: String(d.code), message: d.message, path: d.path.join('.') })),
    version: document ? document.version() : '',
    channels: {},
    operations: {},
  };
  if (document) {
    for (const ch of document.channels()) {
      out.channels[ch.id()] = {
        address: ch.address(),
        messages: ch.messages().all().map((m) => ({
          name: m.name(),
          schemaFormat: m.schemaFormat(),
          headers: m.hasHeaders() ? Object.keys(m.headers().properties() || {}) : [],
          // the Avro record's fields, as the Avro parser turned them into a schema
          fields: m.hasPayload() ? Object.keys(m.payload().properties() || {}) : [],
        })),
      };
    }
    for (const op of document.operations()) {
      out.operations[op.id()] = { action: op.action(), channels: op.channels().all().map((c) => c.id()) };
    }
  }
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
