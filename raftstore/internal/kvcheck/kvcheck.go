// Package kvcheck is the porcupine model the raftstore fault tests check
// client histories against: a map of registers, each key checked on its
// own. A put whose outcome the client never learned is recorded with
// Return = math.MaxInt64, so it may or may not have taken effect.
package kvcheck

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// Input is one client operation: a put of Value to Key, or a get of Key.
type Input struct {
	Put        bool
	Key, Value string
}

// Output is what a get returned (the zero Output for a put).
type Output struct {
	Value string
	Found bool
}

// Model is the register-per-key model.
var Model = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(Input).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() interface{} { return Output{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		in, st := input.(Input), state.(Output)
		if in.Put {
			return true, Output{Value: in.Value, Found: true}
		}
		return output.(Output) == st, st
	},
	DescribeOperation: func(input, output interface{}) string {
		in := input.(Input)
		if in.Put {
			return fmt.Sprintf("put(%s, %s)", in.Key, in.Value)
		}
		return fmt.Sprintf("get(%s) -> %+v", in.Key, output)
	},
}
