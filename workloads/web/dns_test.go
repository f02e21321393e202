package web

import (
	"strings"
	"testing"

	"github.com/netemu/netemu/emu"
	"golang.org/x/net/dns/dnsmessage"
)

// query builds a DNS query for name with ID id.
func query(t *testing.T, name string, id uint16) []byte {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: id, RecursionDesired: true})
	b.StartQuestions()
	b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET})
	msg, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// The server answers an A query for its name with the server's address,
// any other name with NXDOMAIN, and ignores what is not a query; the
// client takes only the answer to its own query.
func TestDNSAnswer(t *testing.T) {
	resp, ok := answer(query(t, "Server.", 7))
	if !ok {
		t.Fatal("no answer to a query for server.")
	}
	if addr, ok, err := parseAnswer(resp, 7); !ok || err != nil || addr != emu.ServerAddr {
		t.Errorf("answer: %v, %v, %v; want %v", addr, ok, err, emu.ServerAddr)
	}
	if _, ok, _ := parseAnswer(resp, 8); ok {
		t.Error("an answer with another query's ID was taken")
	}
	if _, ok := answer(resp); ok {
		t.Error("the server answered a response")
	}
	resp, _ = answer(query(t, "example.com.", 9))
	if _, ok, err := parseAnswer(resp, 9); !ok || err == nil || !strings.Contains(err.Error(), "NameError") {
		t.Errorf("unknown name: %v, %v; want the server's NXDOMAIN", ok, err)
	}
}
