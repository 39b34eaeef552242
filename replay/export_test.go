package replay

// SetShadowBounds lowers a shadow's queue and lost-run bounds, before its
// first record.
func SetShadowBounds(sh *Shadow, queue, lost int) {
	sh.qmu.Lock()
	sh.maxQueue, sh.maxLost = queue, lost
	sh.qmu.Unlock()
}
