package services

import (
	"encoding/json"
	"testing"

	"github.com/sondedbg/sonde/target"
)

// The typed replies replaced maps built by hand: they must encode to the
// bytes the maps did (encoding/json writes a map's keys sorted), which
// clients and the recorded sessions hold. Each case gives the struct and
// the map the service built for the same values.
func TestTypedRepliesKeepTheMapsBytes(t *testing.T) {
	access := []string{string(target.AccessInstruction), string(target.AccessData), string(target.AccessUser), "rd-stop", "wr-stop"}
	cases := []struct {
		name     string
		typed    any
		asBefore map[string]any
	}{
		{"memory context", memoryProps{ID: "P7", ProcessID: "P7", Name: "a \"b\"<c>", AddressSize: 8, EndBound: ^uint64(0), AccessTypes: access},
			map[string]any{"ID": "P7", "ProcessID": "P7", "Name": "a \"b\"<c>", "BigEndian": false, "AddressSize": 8,
				"StartBound": uint64(0), "EndBound": ^uint64(0), "AccessTypes": access}},
		{"memory change", memoryChange{Addr: 1<<64 - 1, Size: 16},
			map[string]any{"addr": uint64(1<<64 - 1), "size": uint64(16)}},
		{"region", regionProps{Addr: 0x400000, Size: 4096, Offs: 0, Flags: 5, FileName: "/bin/x"},
			map[string]any{"Addr": uint64(0x400000), "Size": uint64(4096), "Offs": uint64(0), "Flags": 5, "FileName": "/bin/x"}},
		{"region of a section", regionProps{Addr: 1, Size: 2, Offs: 3, Flags: 3, FileName: "/lib/y.so", BSS: true, SectionName: ".bss"},
			map[string]any{"Addr": uint64(1), "Size": uint64(2), "Offs": uint64(3), "Flags": 3, "FileName": "/lib/y.so", "BSS": true, "SectionName": ".bss"}},
		{"terminal", terminalProps{ID: "T1", ProcessID: "P5", PtyType: "xterm", Encoding: "UTF-8", Width: 80, Height: 24},
			map[string]any{"ID": "T1", "ProcessID": "P5", "PtyType": "xterm", "Encoding": "UTF-8", "Width": 80, "Height": 24}},
		{"terminal with streams", terminalProps{ID: "T1", ProcessID: "P5", PtyType: "", Encoding: "", StdInID: "VS1", StdOutID: "VS2", StdErrID: "VS2"},
			map[string]any{"ID": "T1", "ProcessID": "P5", "PtyType": "", "Encoding": "", "Width": 0, "Height": 0,
				"StdInID": "VS1", "StdOutID": "VS2", "StdErrID": "VS2"}},
		{"disassembly capabilities", disassemblyCaps{ISA: isaX8664, OpcodeValue: true, Syntax: "GNU"},
			map[string]any{"ISA": isaX8664, "OpcodeValue": true, "Simplified": false, "PseudoInstruction": false, disassemblySyntaxID: "GNU"}},
		{"isa", isaProps{Addr: 0x401000, Alignment: 1, MaxInstrSize: 15, DefISA: isaX8664, ISA: isaX8664},
			map[string]any{"Addr": uint64(0x401000), "Size": uint64(0), "Alignment": 1, "MaxInstrSize": 15, "DefISA": "X86_64", "ISA": "X86_64"}},
		{"run control process", &runControlProps{ID: "P3", ProcessID: "P3", BPGroup: "P3", SymbolsGroup: "P3", CanSuspend: true, CanTerminate: true,
			WordSize: 8, CPUGroup: "CPU", CreatorID: "P2", Name: "/bin/x", IsContainer: true, CanResume: 1, CanDetach: true, RCGroup: "P3"},
			map[string]any{"ID": "P3", "ProcessID": "P3", "BPGroup": "P3", "SymbolsGroup": "P3", "CanSuspend": true, "CanTerminate": true,
				"WordSize": 8, "CPUGroup": "CPU", "CreatorID": "P2", "Name": "/bin/x", "IsContainer": true, "HasState": false,
				"CanResume": uint64(1), "CanDetach": true, "RCGroup": "P3"}},
		{"run control thread", &runControlProps{ID: "P3.4", ProcessID: "P3", BPGroup: "P3", SymbolsGroup: "P3", CanSuspend: true, CanTerminate: true,
			WordSize: 8, CPUGroup: "CPU", ParentID: "P3", Name: "4", HasState: true, CanResume: 1, CanCount: new(uint64),
			RegAccessTypes: []string{"rd-stop", "wr-stop"}, RCGroup: "P3.4", AdditionalInfo: "tid 4"},
			map[string]any{"ID": "P3.4", "ProcessID": "P3", "BPGroup": "P3", "SymbolsGroup": "P3", "CanSuspend": true, "CanTerminate": true,
				"WordSize": 8, "CPUGroup": "CPU", "ParentID": "P3", "Name": "4", "IsContainer": false, "HasState": true,
				"CanResume": uint64(1), "CanCount": uint64(0), "RegAccessTypes": []string{"rd-stop", "wr-stop"}, "RCGroup": "P3.4",
				"AdditionalInfo": "tid 4"}},
		{"processes capabilities", processesCaps{true, true, true, true, true, true, true, true, true, true},
			map[string]any{"CanTerminate": true, "CanTerminateAttached": true, "StopAtEntry": true, "StopAtMain": true,
				"Attach": true, "AttachChildren": true, "UseTerminal": true, "SigDontStop": true, "SigDontPass": true, "SigPassHandled": true}},
		{"process", &processProps{ID: "P9", Name: "/bin/y", PID: 9, CanTerminate: true, Attached: true},
			map[string]any{"ID": "P9", "Name": "/bin/y", "PID": 9, "CanTerminate": true, "Attached": true}},
		{"launched process", &processProps{ID: "P9", Name: "y", PID: 9, CanTerminate: true, StdInID: "VS1", StdOutID: "VS2", StdErrID: "VS3"},
			map[string]any{"ID": "P9", "Name": "y", "PID": 9, "CanTerminate": true, "Attached": false, "StdInID": "VS1", "StdOutID": "VS2", "StdErrID": "VS3"}},
	}
	for _, c := range cases {
		got, err := json.Marshal(c.typed)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(c.asBefore)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, want)
		}
	}
}
