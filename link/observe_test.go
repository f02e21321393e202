package link

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestObserverSeesEveryStep(t *testing.T) {
	r := newRig(t, Config{Rate: 12_000_000, Delay: 10 * time.Millisecond, Qdisc: Qdisc{Limit: 2}, DelayedACK: 40 * time.Millisecond})
	var mu sync.Mutex
	var log []string
	r.l.Observe(func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Time != r.l.Start().Add(e.At) {
			t.Errorf("event time %v, link start + At %v", e.Time, r.l.Start().Add(e.At))
		}
		s := fmt.Sprintf("%v %v@%v n=%d", e.Kind, e.Dir, e.At, len(e.Packet))
		switch e.Kind {
		case EventQueue:
			s += fmt.Sprintf(" wire %v-%v due %v q=%d", e.Start, e.Finish, e.Due, e.Queue)
		case EventDrop:
			s += " " + e.Reason.String()
		}
		log = append(log, s)
	})
	r.at(0, func() {
		for range 3 {
			r.l.Send(AtoB, rawPkt(1500))
		}
	})
	r.run(time.Second)
	want := []string{
		"send a>b@0s n=1500", "queue a>b@0s n=1500 wire 0s-1ms due 11ms q=1",
		"send a>b@0s n=1500", "queue a>b@0s n=1500 wire 1ms-2ms due 12ms q=2",
		"send a>b@0s n=1500", "drop a>b@0s n=1500 queue-full",
		"deliver a>b@11ms n=1500", "deliver a>b@12ms n=1500",
	}
	mu.Lock()
	got := log
	mu.Unlock()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestObserverSeesHolds(t *testing.T) {
	r := interactiveRig(t)
	var mu sync.Mutex
	var kinds []string
	r.l.Observe(func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Dir == BtoA {
			kinds = append(kinds, fmt.Sprintf("%v@%v held=%v", e.Kind, e.At, e.Held))
		}
	})
	r.at(20*time.Millisecond, func() { r.l.Send(AtoB, dataAB(iss+5, 4)) })
	r.at(21500*time.Microsecond, func() { r.l.Send(BtoA, ackBA(iss+9)) })
	r.run(200 * time.Millisecond)
	want := "send@21.5ms held=0s hold@21.5ms held=0s release@61.5ms held=40ms queue@61.5ms held=0s deliver@62.5ms held=0s"
	mu.Lock()
	got := strings.Join(kinds, " ")
	mu.Unlock()
	if got != want {
		t.Errorf("b>a events %q\nwant %q", got, want)
	}
}
