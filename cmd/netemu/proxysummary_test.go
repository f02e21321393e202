package main

import (
	"strings"
	"testing"
	"time"

	"github.com/netemu/netemu/proxy"
)

// The summary's total row says it is the total, and counts the
// connections where a row names its way in, not in the conn column of
// connection numbers.
func TestProxySummaryTotalRow(t *testing.T) {
	recs := []proxy.Record{
		{ID: 3, Via: "forward 127.0.0.1:8080", Upstream: "127.0.0.1:3000", Duration: 574200 * time.Microsecond, BytesUp: 86, BytesDown: 100204, Retransmits: 1},
	}
	for _, tc := range []struct {
		tot  proxy.Totals
		want string
	}{
		{proxy.Totals{Conns: 1, BytesUp: 86, BytesDown: 100204, Retransmits: 1, LinkRetransmits: 1}, "" +
			"   conn                     via        upstream  duration  bytes up  bytes down  retransmits  error\n" +
			"      3  forward 127.0.0.1:8080  127.0.0.1:3000  574.2 ms        86      100204            1  \n" +
			"  total            1 connection                                  86      100204            1\n"},
		{proxy.Totals{Conns: 3, BytesUp: 258, BytesDown: 300612, Retransmits: 1, LinkRetransmits: 2}, "" +
			"   conn                                       via        upstream  duration  bytes up  bytes down  retransmits  error\n" +
			"      …  2 earlier connections, in the total only                                                             \n" +
			"      3                    forward 127.0.0.1:8080  127.0.0.1:3000  574.2 ms        86      100204            1  \n" +
			"      …     retransmits in no connection's record                                                            1\n" +
			"  total                             3 connections                                 258      300612            2\n"},
	} {
		var b strings.Builder
		if err := writeProxySummary(&b, recs, tc.tot); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("summary of %d connections:\n%s\nwant\n%s", tc.tot.Conns, b.String(), tc.want)
		}
	}
}
