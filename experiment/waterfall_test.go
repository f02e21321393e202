package experiment

import (
	"reflect"
	"testing"
	"time"

	"github.com/netemu/netemu/report/waterfall"
	"github.com/netemu/netemu/workloads"
	"github.com/netemu/netemu/workloads/web"
)

// A request's timing becomes its phases: queued until its connection's
// handshakes begin and between them and its sending, then the handshakes,
// waiting and receiving.
func TestSegments(t *testing.T) {
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	rt := web.ResourceTiming{Start: 0, DNS: &web.Span{Start: ms(10), End: ms(60)}, Connect: &web.Span{Start: ms(60), End: ms(110)},
		TLS: &web.Span{Start: ms(110), End: ms(160)}, Sent: ms(170), FirstByte: ms(220), LastByte: ms(230)}
	want := []waterfall.Segment{
		{Phase: waterfall.Queued, Start: 0, End: 0.010},
		{Phase: waterfall.DNS, Start: 0.010, End: 0.060},
		{Phase: waterfall.Connect, Start: 0.060, End: 0.110},
		{Phase: waterfall.TLS, Start: 0.110, End: 0.160},
		{Phase: waterfall.Queued, Start: 0.160, End: 0.170},
		{Phase: waterfall.Waiting, Start: 0.170, End: 0.220},
		{Phase: waterfall.Receiving, Start: 0.220, End: 0.230},
	}
	if got := segments(rt); !reflect.DeepEqual(got, want) {
		t.Errorf("segments:\n%v\nwant\n%v", got, want)
	}
	reused := web.ResourceTiming{Start: ms(100), Sent: ms(100), FirstByte: ms(150), LastByte: ms(150)}
	if got := segments(reused); len(got) != 2 || got[0].Phase != waterfall.Waiting || got[1].Phase != waterfall.Receiving {
		t.Errorf("a request on a reused connection: %v", got)
	}
	if _, ok := WaterfallFigure("bulk", workloads.Result{Detail: workloads.BulkDetail{}}); ok {
		t.Error("a result without timings has a waterfall")
	}
}
