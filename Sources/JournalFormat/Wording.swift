/// Counts as a person writes them in reports and messages: "1 event", "2 events".
public enum Wording {
    public static func counted(_ count: some BinaryInteger, _ noun: String, plural: String? = nil) -> String {
        "\(count) " + (count == 1 ? noun : plural ?? noun + "s")
    }
}
