// Package compare runs variants of a scenario side by side: the handoff
// policies of one disaggregated scenario, several scenario files, or one
// scenario with named sets of overrides. Each variant is an independent,
// deterministic run on the shared worker pool (package workpool); a
// policy that stops the run (eager) yields what had happened by the stop.
// Table renders the results as the text table `servesim compare` prints.
package compare
