import Logging

extension Logger {
    /// Runs in tests log only real trouble, so test output stays readable.
    static var quiet: Logger {
        var logger = Logger(label: "storesync-test")
        logger.logLevel = .warning
        return logger
    }
}
