package tcpstack

import (
	"testing"

	"go.uber.org/goleak"
	"gvisor.dev/gvisor/pkg/tcpip"
)

type tcpipCC = tcpip.CongestionControlOption

// TestMain fails the package's tests if any goroutine outlives them: every
// host is closed by its test's cleanup.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
