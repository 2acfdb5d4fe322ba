// Package des is the discrete-event core of servesim: a simulated clock in
// integer nanoseconds, an event queue ordered by (time, sequence number) so
// that simultaneous events fire in the order they were scheduled, and seeded
// random streams, one per purpose.
//
// Nothing here reads the wall clock, starts a goroutine or keeps global
// state: the same seed and the same sequence of calls give the same results.
package des
