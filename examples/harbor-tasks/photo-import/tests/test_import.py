import unittest
from pathlib import Path

LIBRARY = {
    "2022/07/20220704-120000.jpg": "photo-Z",
    "2024/01/20240105-123000.jpg": "photo-A",
    "2024/01/20240105-123000-1.jpg": "photo-B",
    "2024/01/20240105-123000-2.jpg": "photo-C",
    "2023/12/20231231-235959.jpg": "photo-D",
    "2024/02/20240229-080000.jpg": "photo-E",
    "2024/03/20240309-070503.jpg": "photo-I",
    "2024/04/20240430-235959.jpg": "photo-N",
}
INBOX = {
    "IMG_20240105_123000 (1).jpg": "photo-B",
    "IMG_20230229_080000.jpg": "photo-F",
    "IMG_20241301_000000.jpg": "photo-G",
    "IMG_20240101_246000.jpg": "photo-H",
    "img_20240310_101010.jpg": "photo-J",
    "PXL_20240311_101010.jpg": "photo-K",
    "IMG_20240312_111111.jpg.bak": "photo-L",
    "VID_20240101_101010.mp4": "video",
    "notes.txt": "notes",
    "IMG_20240420_235960.jpg": "photo-M",
}


def tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in root.rglob("*") if p.is_file()}


class ImportTest(unittest.TestCase):
    def test_library(self):
        self.assertEqual(tree(Path("/data/library")), LIBRARY)

    def test_inbox(self):
        self.assertEqual(tree(Path("/data/inbox")), INBOX)


if __name__ == "__main__":
    unittest.main()
