package tcf

// TimeQuickEvery is timeQuickEvery, for the external tests.
const TimeQuickEvery = timeQuickEvery

// ReplyChunk is replyChunk, for tests of how replies are written.
const ReplyChunk = replyChunk
