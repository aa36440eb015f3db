import JournalFormat

/// etcd's v3 JSON gateway writes every key and value in base64 (`Base64`), every 64-bit number
/// as a string, and leaves out fields at their default value; its field names come in either
/// spelling.
extension JSONValue {
    /// The field under either spelling the gateway may use (`create_revision`, `createRevision`).
    func field(_ snake: String) -> JSONValue? {
        if let value = self[snake] { return value }
        var camel = ""
        var upper = false
        for character in snake {
            if character == "_" { upper = true } else { camel += upper ? character.uppercased() : String(character); upper = false }
        }
        return self[camel]
    }
}
