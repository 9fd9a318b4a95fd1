import { BadRequestException, Injectable, type PipeTransform } from '@nestjs/common';

/** `:id` as an order id: a decimal integer in the id column's range (1..2^31-1), else 400. */
@Injectable()
export class OrderIdPipe implements PipeTransform<string, number> {
  transform(value: string): number {
    if (!/^[1-9][0-9]{0,9}$/.test(value) || Number(value) > 2_147_483_647)
      throw new BadRequestException('id must be an integer in 1..2147483647');
    return Number(value);
  }
}
