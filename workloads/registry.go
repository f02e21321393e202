package workloads

// registry lists the workloads the command line knows, in the order of
// help and of reproduce's tables. A new workload is one file that
// defines its Kind, and one line here.
var registry = []Kind{
	pageKind,
	bulkKind,
	keepAliveKind,
	nagleKind,
	rpcKind,
	loadedKind,
	shareKind,
}
