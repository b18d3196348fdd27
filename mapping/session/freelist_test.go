package session

import "testing"

// TestFreeListHandsBackClearedStatesUpToItsBound checks that a state put
// back comes out cleared (no slice of the old one shared), and that no
// more than maxFree are kept.
func TestFreeListHandsBackClearedStatesUpToItsBound(t *testing.T) {
	var l freeList[reqState]
	st := l.get()
	st.msgID = "msg_1"
	st.toolIDs = append(st.toolIDs, "toolu_1")
	l.put(st)
	again := l.get()
	if again != st {
		t.Fatalf("get after put made a new state instead of reusing the kept one")
	}
	if again.msgID != "" || again.toolIDs != nil {
		t.Fatalf("reused state not cleared: %+v", again)
	}
	for i := 0; i < maxFree+10; i++ {
		l.put(new(reqState))
	}
	if len(l.items) != maxFree {
		t.Fatalf("kept %d states, want at most %d", len(l.items), maxFree)
	}
}
