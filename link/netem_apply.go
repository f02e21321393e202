package link

// ApplyNetem returns base with the options of netem (a ParseNetem result
// with its given list) in place of base's: what a direction looks like
// once tc's netem line is added to what the flags said.
func ApplyNetem(base, netem Config, given []string) Config {
	for _, opt := range given {
		switch opt {
		case "limit":
			base.QueuePackets, base.QueueBytes = netem.QueuePackets, 0
		case "delay":
			base.Delay, base.Jitter, base.JitterCorr = netem.Delay, netem.Jitter, netem.JitterCorr
		case "distribution":
			base.Distribution = netem.Distribution
		case "loss":
			base.Loss = netem.Loss
		case "corrupt":
			base.Corrupt = netem.Corrupt
		case "duplicate":
			base.Duplicate = netem.Duplicate
		case "reorder":
			base.Reorder, base.ReorderGap = netem.Reorder, netem.ReorderGap
		case "gap":
			base.ReorderGap = netem.ReorderGap
		case "rate":
			base.Rate, base.PacketOverhead, base.CellSize, base.CellOverhead = netem.Rate, netem.PacketOverhead, netem.CellSize, netem.CellOverhead
		case "seed":
			base.Seed = netem.Seed
		}
	}
	return base
}
