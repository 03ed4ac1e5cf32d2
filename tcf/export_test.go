package tcf

// TimeQuickEvery is timeQuickEvery, for the external tests.
const TimeQuickEvery = timeQuickEvery
