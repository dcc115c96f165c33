// Package simcli holds the options the simulation and replay drivers share
// (scheduler/placement/sim/cmd, scheduler/placement/frag/cmd, bench/peers): list
// flags that parse "1,2,3" into whole numbers, numbers or names from an allowed
// set, each a flag.Value whose errors name the bad item (the flag package adds
// the flag's name: invalid value "1,x" for flag -seed: "x" is not a whole
// number), the -seed flag, and Cmd, which prints a driver's error as
// "<name>: <err>" and exits.
//
// It is for drivers' main packages only: nothing here is read by the
// simulators themselves, which take their lists in their Configs.
package simcli
