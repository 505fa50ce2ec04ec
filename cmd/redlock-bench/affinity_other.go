//go:build !linux

package main

// affinity is unknown outside Linux.
func affinity() []int { return nil }
