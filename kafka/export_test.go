package kafka

// Internals the external tests (package kafka_test, which may import
// kafkatest: kafkatest imports kafka) drive.

// ListOffsetsWithin is ListOffsets with a patience of the test's.
var ListOffsetsWithin = listOffsets
