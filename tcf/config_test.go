package tcf_test

import "github.com/sondedbg/sonde/tcf"

func tcfConfig() tcf.Config { return tcf.Config{} }
