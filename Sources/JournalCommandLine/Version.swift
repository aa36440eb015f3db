/// The version `journal --version` prints (journal and journal-relay are released together).
package let journalVersion = "0.4.0"
