package consumer

import (
	"fmt"
	"slices"
	"testing"

	kafkago "github.com/segmentio/kafka-go"
)

// Every member is given partition n of the requests topic with partition
// n of the input topic, whatever order the broker's metadata lists the
// partitions in: a request is carried out by the member that holds its
// batch's run. kafka-go's range balancer gives each member the partitions
// at its range of indices in the order listed, and kfake lists them in Go
// map order: a two-instance run logged "request partition assigned without
// its input partition" in most generations, and a request of such a
// partition waited for a rebalance that the same members would not make.
func TestRangeAssignmentPairsTheTopicsPartitions(t *testing.T) {
	const parts = 6
	members := []kafkago.GroupMember{{ID: "b", Topics: []string{"in", "req"}}, {ID: "a", Topics: []string{"in", "req"}},
		{ID: "c", Topics: []string{"in", "req"}}}
	listed := func(topic string, order []int) []kafkago.Partition {
		var out []kafkago.Partition
		for _, id := range order {
			out = append(out, kafkago.Partition{Topic: topic, ID: id})
		}
		return out
	}
	for _, c := range []struct{ in, req []int }{
		{[]int{0, 1, 2, 3, 4, 5}, []int{0, 1, 2, 3, 4, 5}},
		{[]int{0, 1, 2, 3, 4, 5}, []int{5, 4, 3, 2, 1, 0}},
		{[]int{3, 0, 5, 1, 4, 2}, []int{1, 5, 0, 2, 3, 4}},
	} {
		t.Run(fmt.Sprintf("in%v/req%v", c.in, c.req), func(t *testing.T) {
			got := groupBalancer.AssignGroups(members, append(listed("in", c.in), listed("req", c.req)...))
			var all []int
			for _, m := range members {
				in, req := slices.Sorted(slices.Values(got[m.ID]["in"])), slices.Sorted(slices.Values(got[m.ID]["req"]))
				if !slices.Equal(in, req) {
					t.Errorf("member %s: input partitions %v, request partitions %v", m.ID, in, req)
				}
				if len(in) != parts/len(members) {
					t.Errorf("member %s: %d input partitions, want %d", m.ID, len(in), parts/len(members))
				}
				all = append(all, in...)
			}
			if slices.Sort(all); !slices.Equal(all, []int{0, 1, 2, 3, 4, 5}) {
				t.Errorf("input partitions assigned: %v", all)
			}
		})
	}
}
