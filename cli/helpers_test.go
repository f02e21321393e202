package cli

// The commands the tests parse for: run's rules, and sweep's, which
// takes lists.
var (
	testRun   = &Command{Name: "run", Rules: Rules{Groups: LinkRunGroups}}
	testSweep = &Command{Name: "sweep", Lists: true, Rules: Rules{Groups: Groups}}
)
