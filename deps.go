package lakewap

import (
	_ "github.com/duckdb/duckdb-go/v2"
	_ "github.com/hamba/avro/v2"
	_ "github.com/hamba/avro/v2/registry"
	_ "github.com/segmentio/kafka-go"
	_ "github.com/slack-go/slack"
	_ "github.com/slack-go/slack/slacktest"
	_ "github.com/treeverse/lakefs/pkg/api/apigen"
	_ "github.com/twmb/franz-go/pkg/kfake"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "gopkg.in/yaml.v3"
)
