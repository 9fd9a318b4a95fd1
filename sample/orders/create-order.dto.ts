import { IsInt, IsString, Length, Matches, Max, Min, ValidateIf } from 'class-validator';

/** Printable text: no control characters (NUL among them, which PostgreSQL text refuses), not only spaces. */
const TEXT = /^(?=.*\S)[^\p{Cc}]*$/u;

/** Body of `POST /orders`. The bounds keep every value inside what both databases store. */
export class CreateOrderDto {
  @IsString()
  @Length(1, 200)
  @Matches(TEXT, { message: 'customer must be printable text, not only spaces' })
  customer!: string;

  @IsString()
  @Length(1, 200)
  @Matches(TEXT, { message: 'item must be printable text, not only spaces' })
  item!: string;

  /** Default 1 when absent (`null` is a wrong type, not absent). */
  @ValidateIf((o: CreateOrderDto) => o.quantity !== undefined)
  @IsInt()
  @Min(1)
  @Max(1_000)
  quantity?: number;
}
