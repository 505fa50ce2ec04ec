package main

import "golang.org/x/sys/unix"

// affinity returns the CPUs this process may run on, or nil if unknown.
func affinity() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var cpus []int
	for i := 0; i < 1024; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus
}
