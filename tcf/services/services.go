package services

// RegisterAll adds every service this package offers, then starts following
// the target.
func (a *Agent) RegisterAll() {
	a.RegisterRunControl()
	a.RegisterProcesses()
	a.RegisterMemory()
	a.RegisterMemoryMap()
	a.RegisterRegisters()
	a.RegisterStackTrace()
	a.RegisterSymbols()
	a.RegisterSymbolFrameInfo()
	a.RegisterLineNumbers()
	a.RegisterExpressions()
	a.RegisterBreakpoints()
	a.RegisterStreams()
	a.RegisterTerminals()
	a.RegisterPathMap()
	a.RegisterFileSystem()
	a.RegisterSysMonitor()
	a.RegisterContextQuery()
	a.RegisterDisassembly()
	a.RegisterDPrintf()
	a.SetLocator(a.session)
	a.Start()
}
