package kafkatest

import (
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AnswerListOffsets makes f's next ListOffsets request (every one while
// keep) answer code for every partition it names, as a broker short of
// CPU answers UNKNOWN_SERVER_ERROR for a fresh topic, and counts those
// answers.
func AnswerListOffsets(f *kfake.Cluster, code int16, keep bool) *atomic.Int32 {
	var answered atomic.Int32
	f.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if keep {
			f.KeepControl()
		}
		answered.Add(1)
		r := req.(*kmsg.ListOffsetsRequest)
		resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range r.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	return &answered
}
