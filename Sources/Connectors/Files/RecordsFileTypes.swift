import Catalog
import Foundation

/// The typed value of a CSV cell: inferred from its text, or parsed as the
/// type the job declares for its column.
///
/// Inference is cautious, because a wrong guess loses data the user cannot
/// get back: a cell is an integer only when the integer prints back as the
/// same text (`007`, a ZIP code, stays text; so do `+5` and `-0`), and a real
/// only when its number prints back as the same number (`1.50` and `1e5` are
/// reals; `0.10000000000000001`, more digits than a double keeps, stays text,
/// as do `NaN`, `inf`, `1,5` and `1,000`). Dates stay text: ISO 8601 text is
/// the canonical form of a date, and ``FieldType/of(_:)`` recognises it.
/// Every other cell is text, as it is in the file.
enum CSVValue {
    /// The value of a cell of a column without a declared type (never empty:
    /// an empty cell is an absent field).
    static func inferred(_ text: String) -> JSONValue {
        var copy = text
        return copy.withUTF8 { bytes in
            guard let first = bytes.first,
                  first &- UInt8(ascii: "0") < 10 || first == UInt8(ascii: "-") || first == UInt8(ascii: ".")
            else { return .string(text) }
            if let integer = exactInteger(bytes) { return .int(integer) }
            if let real = exactReal(bytes, text) { return .double(real) }
            return .string(text)
        }
    }

    /// The value of a cell of a column declared `type`; nil when the text is
    /// not one. Declared numbers are read as a person writes them: surrounding
    /// spaces, a `+`, leading zeros (`qty: integer` reads `007` as 7); a
    /// declared date must be ISO 8601 (see ``FieldType/isISO8601Date(_:)``).
    static func declared(_ text: String, as type: FieldType) -> JSONValue? {
        switch type {
        case .text:
            return .string(text)
        case .date:
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            return FieldType.isISO8601Date(trimmed) ? .string(trimmed) : nil
        case .integer:
            return Int64(text.trimmingCharacters(in: .whitespaces)).map(JSONValue.int)
        case .real:
            var trimmed = text.trimmingCharacters(in: .whitespaces)
            let wellFormed = trimmed.withUTF8 { realSyntax($0, lenient: true) != nil }
            guard wellFormed, let value = Double(trimmed), value.isFinite else { return nil }
            return .double(value)
        }
    }

    /// `-?(0|[1-9][0-9]*)` within Int64.
    private static func exactInteger(_ b: UnsafeBufferPointer<UInt8>) -> Int64? {
        let digitsStart = b[0] == UInt8(ascii: "-") ? 1 : 0
        guard b.count > digitsStart, b.count - digitsStart <= 19 else { return nil }
        for i in digitsStart..<b.count where b[i] &- UInt8(ascii: "0") >= 10 { return nil }
        // A leading zero makes a code (`007`), and `-0` is not how anyone writes zero.
        if b[digitsStart] == UInt8(ascii: "0"), b.count > 1 { return nil }
        var value: Int64 = 0
        for i in digitsStart..<b.count {
            let digit = Int64(b[i] - UInt8(ascii: "0"))
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            // Accumulate negatively so Int64.min fits.
            let (next, o2) = times10.subtractingReportingOverflow(digit)
            guard !o1, !o2 else { return nil }
            value = next
        }
        if digitsStart == 1 { return value }
        let (positive, overflow) = (0 as Int64).subtractingReportingOverflow(value)
        return overflow ? nil : positive
    }

    /// A decimal with a fraction or an exponent whose double prints back as the same number.
    private static func exactReal(_ b: UnsafeBufferPointer<UInt8>, _ text: String) -> Double? {
        guard realSyntax(b, lenient: false) == true,
              let value = Double(text), value.isFinite
        else { return nil }
        guard let written = DecimalNumber(b), let printed = DecimalNumber(Array(value.description.utf8)) else { return nil }
        return written == printed ? value : nil
    }

    /// `[sign](digits[.digits]|.digits)[(e|E)[sign]digits]`. Inference takes
    /// only a leading `-` and no leading zero before other digits (`00.5` is
    /// a code); a declared real (`lenient`) also takes `+`, leading zeros and
    /// a bare trailing point (`5.`). Nil when the text is not such a number,
    /// else whether it has a fraction or an exponent.
    private static func realSyntax(_ b: UnsafeBufferPointer<UInt8>, lenient: Bool) -> Bool? {
        var i = 0
        func isDigit(_ i: Int) -> Bool { i < b.count && b[i] &- UInt8(ascii: "0") < 10 }
        if i < b.count, b[i] == UInt8(ascii: "-") || (lenient && b[i] == UInt8(ascii: "+")) { i += 1 }
        let integerStart = i
        while isDigit(i) { i += 1 }
        let integerDigits = i - integerStart
        if !lenient, integerDigits > 1, b[integerStart] == UInt8(ascii: "0") { return nil }
        var fraction = false
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            let start = i
            while isDigit(i) { i += 1 }
            guard i > start || (lenient && integerDigits > 0) else { return nil }
            fraction = true
        }
        guard integerDigits > 0 || fraction else { return nil }
        var exponent = false
        if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            i += 1
            if i < b.count, b[i] == UInt8(ascii: "-") || b[i] == UInt8(ascii: "+") { i += 1 }
            let start = i
            while isDigit(i) { i += 1 }
            guard i > start else { return nil }
            exponent = true
        }
        guard i == b.count else { return nil }
        return fraction || exponent
    }

    /// A number's value as significant digits and a power of ten, to compare
    /// what a cell says with what its double prints.
    private struct DecimalNumber: Equatable {
        var negative: Bool
        /// Without leading or trailing zeros; empty for zero.
        var digits: [UInt8]
        var exponent: Int

        init?(_ b: some Collection<UInt8>) {
            var digits: [UInt8] = []
            var exponent = 0
            var negative = false
            var inFraction = false
            var iterator = b.makeIterator()
            var exponentText: [UInt8]?
            while let byte = iterator.next() {
                if exponentText != nil {
                    exponentText!.append(byte)
                    continue
                }
                switch byte {
                case UInt8(ascii: "-"): negative = true
                case UInt8(ascii: "+"): break
                case UInt8(ascii: "."): inFraction = true
                case UInt8(ascii: "e"), UInt8(ascii: "E"): exponentText = []
                case UInt8(ascii: "0")...UInt8(ascii: "9"):
                    if !(digits.isEmpty && byte == UInt8(ascii: "0")) { digits.append(byte) }
                    if inFraction { exponent -= 1 }
                default: return nil
                }
            }
            if let exponentText {
                // Exponents beyond Int are not finite doubles and never reach here.
                guard let e = Int(String(decoding: exponentText, as: UTF8.self)) else { return nil }
                // `0.0e-9223372036854775808` is a finite double (zero): the sum must not trap.
                let (sum, overflow) = exponent.addingReportingOverflow(e)
                guard !overflow else { return nil }
                exponent = sum
            }
            while digits.last == UInt8(ascii: "0") {
                digits.removeLast()
                exponent += 1
            }
            if digits.isEmpty { exponent = 0 }
            self.negative = negative
            self.digits = digits
            self.exponent = exponent
        }
    }
}
