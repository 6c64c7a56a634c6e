package outbox_test

// childEnv, when set, makes the test binary a child process of a test.
const childEnv = "MGMEVENTS_OUTBOX_CHILD"

func childMain(mode string) int { return 2 }
